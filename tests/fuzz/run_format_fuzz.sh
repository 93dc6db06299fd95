#!/usr/bin/env bash
# Builds the format fuzzers (manifest_fuzz, index_fuzz, metadata_jsonl_fuzz, tar_fuzz, parquet_fuzz,
# remote_parse_fuzz: S3 responses, AWS config files, URLs) with clang's
# libFuzzer + ASan/UBSan and runs each for SECONDS on its corpus.
#
#   tests/fuzz/run_format_fuzz.sh [seconds-per-target=20] [extra libFuzzer flags...]
#
# Seeds: tests/fuzz/corpus/<target>/ (kept in the repository), plus the sample folder's
# metadata.jsonl. Work copies and crash-* files go to build/fuzz/<target>/; the script exits
# non-zero if a target fails. Env: CXX (default clang++-14).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:-20}"
shift || true
cxx="${CXX:-clang++-14}"
out="${DOCFEED_FUZZ_DIR:-${root}/build/fuzz}"
mkdir -p "${out}"
source "${root}/tests/fuzz/fuzz_lib.sh"

common=("${root}"/src/base/{status,base64,hash,file,mem_env,recycled_bytes}.cc
        "${root}/src/base/posix/env_posix.cc"
        "${root}"/src/format/{manifest,index,value,arrow_column,arrow_cell}.cc
        "${root}"/src/format/arrow/*.cc "${root}"/src/format/parquet/*.cc
        "${root}"/src/codec/*.cc
        "${root}"/src/codec/internal/*.cc
        "${root}"/src/remote/{url,s3_config,s3_xml}.cc)
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -I"${root}/include" -I"${root}/src")
libs=(-lxxhash -ljpeg -lspng -ldeflate -lwebpdemux -lwebp -lgif -ltiff -larchive -lsnappy -lz -lbrotlidec -lzstd -llz4)

# The code under test is compiled once into an archive (instrumented, without libFuzzer's main)
# and linked into each target; rebuilt only when a source is newer than it.
lib="${out}/libformat_fuzz.a"
if [[ ! -e "${lib}" || -n "$(find "${root}/src/base" "${root}/src/format" "${root}/src/codec" \
      "${root}/src/pack" "${root}/src/remote" "${root}/include" -newer "${lib}" -name '*.[ch]*' | head -1)" ]]; then
  echo "== building the format fuzzers' library"
  fuzz_archive "${lib}" "${cxx}" flags "${common[@]}" "${root}/src/pack/image_folder.cc" \
    "${root}/src/pack/tar_source.cc"
fi

status=0
for target in manifest index metadata_jsonl tar parquet remote_parse; do
  bin="${out}/${target}_fuzz"
  if [[ ! -x "${bin}" || "${lib}" -nt "${bin}" || "${root}/tests/fuzz/${target}_fuzz.cc" -nt "${bin}" ]]; then
    echo "== building ${target}_fuzz"
    "${cxx}" "${flags[@]}" "${root}/tests/fuzz/${target}_fuzz.cc" "${lib}" "${libs[@]}" -o "${bin}"
  fi
  work="${out}/${target}/corpus"
  mkdir -p "${work}"
  if [[ -d "${root}/tests/fuzz/corpus/${target}" ]]; then
    cp -f "${root}/tests/fuzz/corpus/${target}"/* "${work}/" 2>/dev/null || true
  fi
  [[ "${target}" == metadata_jsonl ]] && cp -f "${root}/tests/data/sample-docs/metadata.jsonl" "${work}/sample-docs.jsonl"
  [[ -n "${FUZZ_BUILD_ONLY:-}" ]] || echo "== running ${target}_fuzz for ${seconds}s ($(ls "${work}" | wc -l) seeds)"
  run_fuzz_target "${target}_fuzz" "${out}/${target}" "${bin}" -max_total_time="${seconds}" \
    -rss_limit_mb=2048 -max_len=65536 -timeout=10 -print_final_stats=1 "$@" corpus || status=1
done
exit "${status}"

#!/usr/bin/env bash
# The long fuzzing campaign (`make fuzz-long`): builds every target (tests/fuzz/run_fuzz.sh 1),
# then runs each one alone (one process, -jobs=1 is libFuzzer's default) until it has done RUNS
# executions or SECONDS have passed, whichever comes first, and minimizes what it found
# together with the kept corpus (-merge=1) into tests/fuzz/corpus/<target>/ (files over 64 KiB
# left out: the big seeds are test images the short runs copy anyway). Prints a summary
# line per target (executions, seconds, final cov/ft, crashes) and writes it to
# build/fuzz/long/summary.txt. Exits non-zero if any target crashed (its crash-* file is in
# build/fuzz/long/<target>/).
#
#   tests/fuzz/run_fuzz_long.sh [seconds-per-target=300] [runs-per-target=10000000]
#
# Env FUZZ_TARGETS (default: all of them) runs only the named targets, e.g.
# FUZZ_TARGETS="jpeg metadata_jsonl", to top up the ones short of the bar without rerunning the
# rest; the summary then has their lines only.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:-300}"
runs="${2:-10000000}"
out="${root}/build/fuzz"
long="${out}/long"
mkdir -p "${long}"

# target  binary  seed-dir-made-by-the-short-run  max_len
targets=(
  "jpeg ${out}/jpeg_decode_fuzz ${out}/jpeg/corpus 262144"
  "png ${out}/png_decode_fuzz ${out}/png/corpus 262144"
  "webp ${out}/webp_decode_fuzz ${out}/webp/corpus 262144"
  "gif ${out}/gif_decode_fuzz ${out}/gif/corpus 262144"
  "ppm ${out}/ppm_decode_fuzz ${out}/ppm/corpus 262144"
  "pfm ${out}/pfm_decode_fuzz ${out}/pfm/corpus 262144"
  "tiff ${out}/tiff_decode_fuzz ${out}/tiff/corpus 262144"
  "arrow_stream ${out}/arrow_stream_fuzz ${out}/corpus_arrow 262144"
  "manifest ${out}/manifest_fuzz ${out}/manifest/corpus 65536"
  "index ${out}/index_fuzz ${out}/index/corpus 65536"
  "metadata_jsonl ${out}/metadata_jsonl_fuzz ${out}/metadata_jsonl/corpus 65536"
  "tar ${out}/tar_fuzz ${out}/tar/corpus 65536"
  "parquet ${out}/parquet_fuzz ${out}/parquet/corpus 65536"
  "remote_parse ${out}/remote_parse_fuzz ${out}/remote_parse/corpus 65536"
  "pdf ${out}/pdf_fuzz ${out}/pdf/corpus 65536"
)
only="${FUZZ_TARGETS:-}"
if [[ -n "${only}" ]]; then
  # Checked before the build: a misspelt name would otherwise build everything, run nothing and
  # report success.
  for want in ${only}; do
    printf '%s\n' "${targets[@]}" | grep -q "^${want} " || { echo "unknown target: ${want}"; exit 2; }
  done
fi
"${root}/tests/fuzz/run_fuzz.sh" 1 > "${long}/build.log" 2>&1 || { cat "${long}/build.log"; exit 1; }
summary="${long}/summary.txt"
: > "${summary}"
status=0
for entry in "${targets[@]}"; do
  read -r name bin seeds max_len <<< "${entry}"
  [[ -z "${only}" || " ${only} " == *" ${name} "* ]] || continue
  work="${long}/${name}"
  rm -rf "${work}" && mkdir -p "${work}/corpus"
  cp -f "${seeds}"/* "${work}/corpus/" 2>/dev/null || true
  kept="${root}/tests/fuzz/corpus/${name}"
  [[ -d "${kept}" ]] && cp -f "${kept}"/* "${work}/corpus/" 2>/dev/null || true
  start=$(date +%s)
  crashed=0
  (cd "${work}" && "${bin}" -runs="${runs}" -max_total_time="${seconds}" -max_len="${max_len}" \
     -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 corpus > run.log 2>&1) || crashed=1
  elapsed=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "${work}/run.log" | grep -o '[0-9]*$' || echo 0)
  last=$(grep -E '^#[0-9]+' "${work}/run.log" | grep -E 'cov: [0-9]+' | tail -n 1 || true)
  cov=$(echo "${last}" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo "?")
  ft=$(echo "${last}" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo "?")
  if [[ "${crashed}" == 0 ]]; then
    rm -rf "${work}/min" && mkdir -p "${work}/min"
    "${bin}" -merge=1 -max_len="${max_len}" -rss_limit_mb=2048 -timeout=10 "${work}/min" \
      "${work}/corpus" > "${work}/merge.log" 2>&1
    # Large seeds stay where they are (tests/data/images, which the short runs seed from too).
    find "${work}/min" -type f -size +64k -delete
    rm -rf "${kept}" && mkdir -p "${kept}"
    cp "${work}/min"/* "${kept}/" 2>/dev/null || true
  else
    status=1
  fi
  line="${name}: ${execs} executions in ${elapsed}s, cov ${cov}, ft ${ft}, crashes ${crashed}, corpus $(ls "${kept}" 2>/dev/null | wc -l) files $(du -sk "${kept}" 2>/dev/null | cut -f1) KiB"
  echo "${line}" | tee -a "${summary}"
done
exit "${status}"

#!/usr/bin/env bash
# Builds the codec fuzzers with clang's libFuzzer + ASan/UBSan and runs each for a short time.
#
#   tests/fuzz/run_codec_fuzz.sh [seconds-per-target]   (default 20; env CXX overrides clang++-14)
#
# Seeds come from tests/data/images (by magic, so a renamed file still seeds the right target)
# and tests/fuzz/corpus/<target>/ (kept by the long campaign).
# Crashes are written to build/fuzz/<target>/ as crash-* files; the script exits non-zero if a
# target fails. libjpeg-turbo, libspng, libwebp, giflib and libtiff are the system builds, so
# only docfeed's code is coverage-instrumented; memory errors inside the libraries still surface
# as crashes. The tiff target also seeds from tests/data/tiff/cases (small files only).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:-20}"
cxx="${CXX:-clang++-14}"
out="${root}/build/fuzz"
mkdir -p "${out}"
source "${root}/tests/fuzz/fuzz_lib.sh"

sources=("${root}"/src/codec/*.cc "${root}"/src/codec/internal/*.cc
         "${root}"/src/base/{status,recycled_bytes}.cc)
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -I"${root}/include" -I"${root}/src")
libs=(-ljpeg -lspng -ldeflate -lwebpdemux -lwebp -lgif -ltiff -lz)  # -lz: the PNG structure check's crc32; -ldeflate: PNG decode

seed() {  # seed <corpus-dir> <magic-hex>
  mkdir -p "$1"
  for f in "${root}"/tests/data/images/*.* "${root}"/tests/data/images/gen/* \
           "${root}"/tests/data/images/modes/*; do
    if [[ "$(head -c "$(( ${#2} / 2 ))" "$f" | xxd -p)" == "$2" ]]; then cp -f "$f" "$1/"; fi
  done
}

# The codecs are compiled once (in parallel) into an archive every target links; rebuilt only
# when a source is newer than it, and each target only when it or the archive is newer than the
# binary (a second `make test` does no extra work).
lib="${out}/libcodec_fuzz.a"
if [[ ! -e "${lib}" || -n "$(find "${root}/src/codec" "${root}/src/base" "${root}/include" -newer "${lib}" -name '*.[ch]*' | head -1)" ]]; then
  echo "== building the codec fuzzers' library"
  fuzz_archive "${lib}" "${cxx}" flags "${sources[@]}"
fi

status=0
for target in jpeg png webp gif ppm pfm tiff; do
  bin="${out}/${target}_decode_fuzz"
  if [[ ! -x "${bin}" || "${lib}" -nt "${bin}" || "${root}/tests/fuzz/${target}_decode_fuzz.cc" -nt "${bin}" || "${root}/tests/fuzz/codec_fuzz_common.h" -nt "${bin}" ]]; then
    echo "== building ${target}_decode_fuzz"
    "${cxx}" "${flags[@]}" "${root}/tests/fuzz/${target}_decode_fuzz.cc" "${lib}" "${libs[@]}" -o "${bin}"
  fi
  corpus="${out}/${target}/corpus"
  case "${target}" in
    jpeg) seed "${corpus}" ffd8ff ;;
    png) seed "${corpus}" 89504e47 ;;
    webp) seed "${corpus}" 52494646 ;;
    gif) seed "${corpus}" 474946 ;;
    tiff)  # The TIFF corpus: every case up to 16 KiB (the document pages are larger).
      mkdir -p "${corpus}"
      find "${root}/tests/data/tiff/cases" -name '*.tif' -size -16k -exec cp -f {} "${corpus}/" \; ;;
    ppm)  # No PPM files in tests/data/images: seed with two tiny hand-written ones.
      mkdir -p "${corpus}"
      printf 'P6\n2 1\n255\n\x01\x02\x03\x04\x05\x06' > "${corpus}/rgb.ppm"
      printf 'P5 # gray\n3 1\n255\n\x10\x20\x30' > "${corpus}/gray.pgm" ;;
    pfm)  # Two tiny hand-written float PFMs: 2 x 1 values, and 1 x 2 with "-1" as the scale.
      mkdir -p "${corpus}"
      printf 'Pf\n2 1\n-1.0\n\x00\x00\x80\x3f\x00\x00\x00\xc0' > "${corpus}/row.pfm"
      printf 'Pf 1 2 -1\n\x00\x00\x80\x3f\x00\x00\x00\x00' > "${corpus}/column.pfm" ;;
  esac
  # The corpus the long campaign kept (tests/fuzz/run_fuzz_long.sh).
  cp -f "${root}/tests/fuzz/corpus/${target}"/* "${corpus}/" 2>/dev/null || true
  [[ -n "${FUZZ_BUILD_ONLY:-}" ]] || echo "== running ${target}_decode_fuzz for ${seconds}s ($(ls "${corpus}" | wc -l) seeds)"
  run_fuzz_target "${target}_decode_fuzz" "${out}/${target}" "${bin}" -max_total_time="${seconds}" \
    -rss_limit_mb=2048 -max_len=262144 -timeout=10 -print_final_stats=1 corpus || status=1
done
exit "${status}"

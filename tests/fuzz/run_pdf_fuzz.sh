#!/usr/bin/env bash
# Builds the PDF fuzzer (tests/fuzz/pdf_fuzz.cc) with clang's libFuzzer + ASan/UBSan and runs it
# for SECONDS on its corpus.
#
#   tests/fuzz/run_pdf_fuzz.sh [seconds=20] [extra libFuzzer flags...]
#
# Seeds: tests/data/pdf/*.pdf and tests/fuzz/corpus/pdf/ (kept by the long campaign). poppler is
# the system library: only docfeed's wrapper is coverage-instrumented and checked by ASan, so the
# search is close to blind mutation of the seeds; poppler's own crashes and hangs still surface.
# Crashes go to build/fuzz/pdf/; the script exits non-zero if the target fails.
# Env: CXX (default clang++-14).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:-20}"
shift || true
cxx="${CXX:-clang++-14}"
out="${root}/build/fuzz"
mkdir -p "${out}/pdf"
source "${root}/tests/fuzz/fuzz_lib.sh"

bin="${out}/pdf_fuzz"
sources=("${root}/src/pdf/pdf_document.cc" "${root}/src/pdf/composite.cc" "${root}/src/base/status.cc")
if [[ ! -x "${bin}" || -n "$(find "${root}/tests/fuzz/pdf_fuzz.cc" "${root}/src/pdf" "${root}/src/base" \
      "${root}/include" -newer "${bin}" -name '*.[ch]*' | head -1)" ]]; then
  echo "== building pdf_fuzz"
  "${cxx}" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -I"${root}/include" -I"${root}/src" $(pkg-config --cflags poppler) \
    "${root}/tests/fuzz/pdf_fuzz.cc" "${sources[@]}" $(pkg-config --libs poppler) -o "${bin}"
fi
corpus="${out}/pdf/corpus"
mkdir -p "${corpus}"
cp -f "${root}"/tests/data/pdf/*.pdf "${corpus}/"
cp -f "${root}/tests/fuzz/corpus/pdf"/* "${corpus}/" 2>/dev/null || true
[[ -n "${FUZZ_BUILD_ONLY:-}" ]] || echo "== running pdf_fuzz for ${seconds}s ($(ls "${corpus}" | wc -l) seeds)"
run_fuzz_target pdf_fuzz "${out}/pdf" "${bin}" -max_total_time="${seconds}" \
  -rss_limit_mb=2048 -max_len=65536 -timeout=20 -print_final_stats=1 "$@" corpus

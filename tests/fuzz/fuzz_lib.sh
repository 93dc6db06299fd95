# Sourced by the run_*_fuzz.sh scripts: one way to run a libFuzzer target briefly and report it.
#
#   run_fuzz_target NAME WORKDIR BINARY [libFuzzer flags and corpus dirs...]
#
# Runs BINARY in WORKDIR (where libFuzzer writes crash-*/leak-*/timeout-* files), its whole output
# kept in WORKDIR/run.log. On success prints the last lines (executions, coverage). On failure
# prints, last, what a reader of a CI log needs to reproduce it without the machine: the
# sanitizer or libFuzzer report, the path of the input, and the input itself as base64 (up to
# 4 KiB), then returns 1.
#
# With FUZZ_BUILD_ONLY set (tests/fuzz/run_fuzz.sh build), the scripts build every target and this
# runs none: `make test` compiles the fuzzers in the background and runs them later.
run_fuzz_target() {
  local name="$1" work="$2" bin="$3"
  shift 3
  if [[ -n "${FUZZ_BUILD_ONLY:-}" ]]; then
    echo "== ${name}: built (FUZZ_BUILD_ONLY: not run)"
    return 0
  fi
  local log="${work}/run.log"
  if (cd "${work}" && "${bin}" "$@" > "${log}" 2>&1); then
    tail -n 6 "${log}"
    return 0
  fi
  echo "== ${name}: FAILED (whole log: ${log})"
  # The report: from the first error line to libFuzzer's "Test unit written" line.
  awk '/ERROR: |runtime error:|==ERROR==|deadly signal|Test unit written/ {on = 1}
       on && n < 60 {print; n++}
       /Test unit written/ {exit}' "${log}"
  local unit
  unit="$(grep -o "Test unit written to [^ ]*" "${log}" | tail -n 1 | sed 's/Test unit written to //')"
  if [[ -n "${unit}" && -f "${work}/${unit}" ]]; then
    echo "== ${name}: the input ($(wc -c < "${work}/${unit}") bytes, base64 of the first 4 KiB):"
    head -c 4096 "${work}/${unit}" | base64
  fi
  return 1
}

# fuzz_archive ARCHIVE CXX FLAGS_NAME SOURCE...
#
# Compiles each SOURCE with CXX and the flags in the array named FLAGS_NAME (libFuzzer's own main
# left out: -fsanitize=fuzzer becomes fuzzer-no-link), as many at once as there are cores, into
# ARCHIVE, which every target of a script then links. A compile that fails fails the whole
# archive (nothing half-built is kept).
fuzz_archive() {
  local archive="$1" cxx="$2"
  local -n compile_flags="$3"
  shift 3
  local cflags=("${compile_flags[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}")
  local objs="${archive%.a}-obj" max src name
  max="$(nproc)"
  rm -rf "${objs}" "${archive}" && mkdir -p "${objs}"
  for src in "$@"; do
    while (( $(jobs -rp | wc -l) >= max )); do wait -n || true; done
    name="$(echo "${src#"${root:-}"/}" | tr / _)"
    ( "${cxx}" "${cflags[@]}" -c "${src}" -o "${objs}/${name}.o" || touch "${objs}/FAILED" ) &
  done
  wait
  if [[ -e "${objs}/FAILED" ]]; then
    echo "== compiling the sources of ${archive} failed (errors above)"
    return 1
  fi
  ar rcs "${archive}" "${objs}"/*.o
}

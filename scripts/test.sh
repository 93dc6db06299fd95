#!/usr/bin/env bash
# `make test`: every stage in order, each one's seconds printed at the end (also when a stage
# fails or the run is stopped), so that a CI log says where the time went.
#
# The sanitizer, thread-safety and fuzz trees are compiled meanwhile, in the background at nice 19
# (`make build-checks`, its output in build/checks-build.log): the release tests run at full
# priority and the compiles take the CPU time they leave (the Python tests keep about one core of
# two busy). The stages that run those trees wait for that build; if it failed, its log is printed
# and the run fails. If a foreground stage fails, the background build is stopped.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
make=(make --no-print-directory)
checks_log=build/checks-build.log

times=()      # "stage=seconds" of the stages that ended
current=""    # the stage that is running
checks=""     # the background build's process group
report() {
  echo "make test: seconds per stage: ${times[*]:-none}${current:+ (stopped in ${current})}"
}
stop_checks() {
  if [[ -n "${checks}" ]]; then
    kill -- "-${checks}" 2> /dev/null
    wait "${checks}" 2> /dev/null
    checks=""
  fi
}
trap 'stop_checks; report' EXIT
trap 'exit 130' INT TERM

# stage NAME COMMAND...: runs COMMAND as the stage NAME; a failure ends the run.
stage() {
  local name=$1 start=${SECONDS}
  shift
  current=${name}
  "$@"
  local status=$?
  times+=("${name}=$((SECONDS - start))")
  current=""
  if [[ ${status} -ne 0 ]]; then
    echo "make test: stage ${name} failed (exit ${status})"
    exit "${status}"
  fi
}

# Waits for the background build; prints its log and fails if it failed.
wait_checks() {
  local status=0
  wait "${checks}" || status=$?
  checks=""
  if [[ ${status} -ne 0 ]]; then
    cat "${checks_log}"
    echo "make test: the background build failed (its log above, in ${checks_log})"
  fi
  return "${status}"
}

# A run from a clean clone writes about 15 GB here (build trees 7 GB, the virtual environments
# 7 GB with their torch files hard-linked) and up to 1 GB of test data under ${TMPDIR:-/tmp}. A
# full disk shows up as a pip or compiler error far from its cause, so say it first.
warn_disk() {
  local path free_kb
  for path in . "${TMPDIR:-/tmp}"; do
    free_kb=$(df -Pk "${path}" | awk 'NR == 2 { print $4 }')
    if [[ -n "${free_kb}" && ${free_kb} -lt $((16 * 1024 * 1024)) ]]; then
      echo "make test: warning: $((free_kb / 1024 / 1024)) GB free under ${path}; a run from a" \
        "clean clone needs about 16 GB (build trees, virtual environments, test data)"
    fi
  done
}
warn_disk

# build/asan is configured with .venv/train's Python (its extension), so that venv comes first.
stage setup "${make[@]}" deps .venv/train/.installed
mkdir -p build
set -m
nice -n 19 "${make[@]}" build-checks > "${checks_log}" 2>&1 &
checks=$!
set +m
echo "make test: the sanitizer, thread-safety and fuzz builds run in the background (nice 19, ${checks_log})"

stage build "${make[@]}" build
stage venvs "${make[@]}" venv
stage ctest "${make[@]}" test-cpp
stage python-package "${make[@]}" python-dev
stage python-ref "${make[@]}" test-python-ref
stage python-train "${make[@]}" test-python-train
stage python-hf5 "${make[@]}" test-python-hf5
echo "make test: waiting for the background builds"
stage wait-checks wait_checks
stage asan "${make[@]}" test-asan
stage python-asan "${make[@]}" test-python-asan
stage tsan "${make[@]}" test-tsan
stage thread-safety "${make[@]}" test-thread-safety
stage fuzz "${make[@]}" test-fuzz
echo "make test: every stage passed"

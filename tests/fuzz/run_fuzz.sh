#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 10; `make test` uses a short run).
# Long runs on demand: tests/fuzz/run_fuzz.sh 600; `tests/fuzz/run_fuzz.sh build` compiles them all
# and runs none (what `make test` does in the background before it runs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-10}"
if [[ "${seconds}" == build ]]; then  # compile every target, run none (fuzz_lib.sh)
  export FUZZ_BUILD_ONLY=1
fi
# All of them run even when one fails; a failing script prints its report last, and the list of the
# failed ones comes at the very end (where a truncated CI log still shows it).
failed=()
if [[ -n "${FUZZ_BUILD_ONLY:-}" ]]; then
  for s in codec arrow format pdf; do
    "tests/fuzz/run_${s}_fuzz.sh" "$seconds" || failed+=("$s")
  done
else
  # Each target runs on one core for SECONDS: two lanes of about equal time (6 codec targets and
  # the pdf one; 6 format targets and the arrow one) use both cores of a 2-core machine. Each
  # lane's output is printed whole when both have ended.
  lanes="$(mktemp -d)"
  trap 'rm -rf "$lanes"' EXIT
  lane() {  # lane NAME SCRIPT...: the scripts in turn, output to $lanes/NAME, failures to NAME.failed
    local name=$1 s
    shift
    for s in "$@"; do
      "tests/fuzz/run_${s}_fuzz.sh" "$seconds" >> "$lanes/$name" 2>&1 || echo "$s" >> "$lanes/$name.failed"
    done
  }
  lane a codec pdf &
  lane b format arrow &
  wait
  cat "$lanes/a" "$lanes/b"
  while read -r s; do failed+=("$s"); done < <(cat "$lanes"/*.failed 2> /dev/null)
fi
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FAILED: ${failed[*]} (reports above; inputs under build/fuzz/)"
  exit 1
fi
if [[ -n "${FUZZ_BUILD_ONLY:-}" ]]; then
  echo "fuzz: every target built"
else
  echo "fuzz: every target ran ${seconds}s without a crash"
fi

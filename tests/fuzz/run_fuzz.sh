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
tests/fuzz/run_codec_fuzz.sh "$seconds" || failed+=(codec)
tests/fuzz/run_arrow_fuzz.sh "$seconds" || failed+=(arrow)
tests/fuzz/run_format_fuzz.sh "$seconds" || failed+=(format)
tests/fuzz/run_pdf_fuzz.sh "$seconds" || failed+=(pdf)
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FAILED: ${failed[*]} (reports above; inputs under build/fuzz/)"
  exit 1
fi
if [[ -n "${FUZZ_BUILD_ONLY:-}" ]]; then
  echo "fuzz: every target built"
else
  echo "fuzz: every target ran ${seconds}s without a crash"
fi

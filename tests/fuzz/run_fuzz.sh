#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 10; `make test` uses a short run).
# Long runs on demand: tests/fuzz/run_fuzz.sh 600
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-10}"
tests/fuzz/run_codec_fuzz.sh "$seconds"
tests/fuzz/run_arrow_fuzz.sh "$seconds" 2>&1 | tail -n 5
tests/fuzz/run_format_fuzz.sh "$seconds"
echo "fuzz: every target ran ${seconds}s without a crash"

#!/usr/bin/env bash
# Builds tests/fuzz/arrow_stream_fuzz.cc with clang (libFuzzer + ASan + UBSan) and runs it for a few
# seconds on a corpus seeded with every .arrow file under tests/data/arrow and the corpus the long
# campaign kept (tests/fuzz/corpus/arrow_stream/).
# Usage: tests/fuzz/run_arrow_fuzz.sh [seconds=20] [extra libFuzzer flags...]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-20}"
shift || true
out="${DOCFEED_FUZZ_DIR:-build/fuzz}"
mkdir -p "$out/corpus_arrow"
find tests/data/arrow -name '*.arrow' -exec cp {} "$out/corpus_arrow/" \;
cp -f tests/fuzz/corpus/arrow_stream/* "$out/corpus_arrow/" 2>/dev/null || true
# Rebuild only when a source is newer than the binary (a second `make test` does no extra work).
if [[ ! -x "$out/arrow_stream_fuzz" || -n "$(find tests/fuzz src/format/arrow src/format/arrow_cell.h src/format/arrow_cell.cc src/base include tests/format/arrow -newer "$out/arrow_stream_fuzz" -name '*.[ch]*' | head -1)" ]]; then
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Iinclude -Isrc -Itests \
  tests/fuzz/arrow_stream_fuzz.cc \
  src/format/arrow/array_loader.cc src/format/arrow/compression.cc src/format/arrow/flatbuf.cc \
  src/format/arrow/ipc_metadata.cc src/format/arrow/reader.cc src/format/arrow/schema.cc \
  src/format/arrow/builder.cc src/format/arrow_cell.cc src/base/status.cc \
  $(pkg-config --cflags --libs libzstd liblz4) \
  -o "$out/arrow_stream_fuzz"
fi
source tests/fuzz/fuzz_lib.sh
out="$(cd "$out" && pwd)"
run_fuzz_target arrow_stream_fuzz "$out" "$out/arrow_stream_fuzz" -max_total_time="$seconds" \
  -max_len=262144 -rss_limit_mb=2048 -print_final_stats=1 "$@" "$out/corpus_arrow"

#!/usr/bin/env bash
# Pack throughput on the sample documents: --threads 1 and 2 in one run, each the median of
# REPEATS packs, for `keep` (read + full validating decode + write) and `png` (adds encoding).
# usage: bench/format/pack_bench.sh [BUILD_DIR=build] [REPEATS=3]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
repeats="${2:-3}"
src=tests/data/sample-docs
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
n=$(grep -c . "$src/metadata.jsonl")
mb=$(du -sb "$src" | awk '{print $1/1e6}')
echo "| codec | threads | seconds (median of $repeats) | pages/s | source MB/s | speed-up vs 1 thread |"
echo "|---|---:|---:|---:|---:|---:|"
for codec in keep png; do
  base=""
  for threads in 1 2; do
    times=()
    for ((r = 0; r < repeats; r++)); do
      s=$(date +%s.%N)
      "$build/bin/docfeed" pack "$src" -o "$out/ds" --overwrite --codec "$codec" --threads "$threads" > /dev/null
      e=$(date +%s.%N)
      times+=("$(awk -v e="$e" -v s="$s" 'BEGIN { print e - s }')")
    done
    med=$(printf '%s\n' "${times[@]}" | sort -g | awk -v k=$(( (repeats + 1) / 2 )) 'NR == k')
    [ -z "$base" ] && base="$med"
    awk -v c="$codec" -v t="$threads" -v m="$med" -v n="$n" -v mb="$mb" -v b="$base" \
      'BEGIN { printf "| %s | %d | %.2f | %.1f | %.1f | %.2fx |\n", c, t, m, n / m, mb / m, b / m }'
  done
done

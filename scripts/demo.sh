#!/usr/bin/env bash
# `make demo`: pack the sample documents shipped with the repository, verify the result, show
# what was stored and how compact it is next to the float32 "preprocessed" layout of the
# Hugging Face Donut recipe, and open it with Hugging Face `datasets` when .venv has it.
set -euo pipefail
cd "$(dirname "$0")/.."

docfeed=${DOCFEED:-build/bin/docfeed}
src=tests/data/sample-docs
out=out/demo.docfeed
mkdir -p out

echo "== docfeed pack $src -o $out"
"$docfeed" pack "$src" -o "$out" --overwrite
echo
echo "== docfeed verify $out"
"$docfeed" verify "$out"
echo
echo "== docfeed inspect $out"
"$docfeed" inspect "$out"
echo

samples=$("$docfeed" inspect "$out" --json | sed -n 's/^  "samples": \([0-9]*\),/\1/p')
total=$("$docfeed" inspect "$out" --json | sed -n 's/^  "total_bytes": \([0-9]*\),/\1/p')
# The recipe stores every page as normalized float32 3 x 1553 x 1200 (docs/format.md).
recipe=$((samples * 3 * 1553 * 1200 * 4))
awk -v n="$samples" -v d="$total" -v r="$recipe" 'BEGIN {
  printf "== how compact\n";
  printf "  docfeed dataset:                  %8.1f MB for %d pages (%.0f KB a page)\n", d/1e6, n, d/n/1e3;
  printf "  the recipe'"'"'s float32 pixel_values: %8.1f MB (22.4 MB a page)\n", r/1e6;
  printf "  ratio:                            %8.0fx smaller\n", r/d;
}'

# The loader: the same pages preprocessed at pack time (resize + thumbnail stored losslessly),
# then batches of Donut pixel_values produced by docfeed's C++ workers, with nothing consuming
# them: what a training loop could be fed.
pre=out/demo-1553x1200.docfeed
echo
echo "== docfeed pack $src -o $pre --preprocess donut --size 1553x1200"
"$docfeed" pack "$src" -o "$pre" --overwrite --preprocess donut --size 1553x1200 | tail -n 3
echo
echo "== docfeed bench $pre --batch-size 8 --epochs 3 --dtype uint8 (padded pixels, for the GPU to normalize)"
"$docfeed" bench "$pre" --batch-size 8 --epochs 3 --dtype uint8 --baseline 20
echo
echo "== docfeed bench $out --batch-size 8 (original images: decode + exact resize on the fly)"
"$docfeed" bench "$out" --batch-size 8 --dtype uint8 --baseline 20
echo

if [ -x .venv/bin/python ] && .venv/bin/python -c "import datasets" 2>/dev/null; then
  echo
  echo "== the same directory, opened by Hugging Face datasets"
  .venv/bin/python - "$out" <<'PY'
import sys, datasets
ds = datasets.load_from_disk(sys.argv[1])
print(ds)
row = ds[0]
print("row 0:", row["image"].mode, row["image"].size, "ground_truth:", (row["ground_truth"] or "")[:70], "...")
PY
fi

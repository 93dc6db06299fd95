#!/usr/bin/env bash
# `make demo`: synthesize a few hundred invoices, pack and verify them with docfeed, build the
# Donut recipe's float32 save_to_disk dataset from the same pages, train the same small
# random-initialized Donut with the Hugging Face Seq2SeqTrainer fed both ways, and ask
# `docfeed doctor` what it means for the recipe's full job on a GPU. Everything runs in
# .venv/train with the installed docfeed package (`make python-install`); no download.
# Output: a table on stdout, out/demo/report.md, out/demo/demo.png (scripts/demo_train.py says
# what is measured). Options are passed on, e.g. `scripts/demo.sh --quick`.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${DEMO_PYTHON:-.venv/train/bin/python}
start=$(date +%s)
# Offline by construction: nothing is fetched from the Hugging Face Hub.
HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
  "$python" scripts/demo_train.py "$@"
echo
echo "make demo: done in $(($(date +%s) - start)) s"

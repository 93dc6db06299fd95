#!/usr/bin/env python3
"""Checks that pyarrow and Hugging Face `datasets` read what docfeed's StreamWriter writes.

Usage (from the repository root, after building arrow_test):
    export DOCFEED_ARROW_INTEROP_DIR=$(mktemp -d)
    build/bin/arrow_test --gtest_filter='ArrowRewrite*'
    .venv/bin/python tests/format/arrow/check_pyarrow_interop.py "$DOCFEED_ARROW_INTEROP_DIR"

For every <dir>/<case>/<compression>/data-00000-of-00001.arrow: pyarrow.ipc.open_stream reads
it, Table.validate(full=True) passes, and the table (schema, metadata, values) equals the
original file named in SOURCE. Directories with dataset_info.json also go through
datasets.load_from_disk, whose table must equal the original and whose first row must decode.
"""

import os
import sys

import pyarrow as pa
import pyarrow.ipc as ipc


def read(path):
    with ipc.open_stream(path) as reader:
        return reader.read_all()


def check(case_dir):
    ours_path = os.path.join(case_dir, "data-00000-of-00001.arrow")
    with open(os.path.join(case_dir, "SOURCE")) as f:
        source = f.read().strip()
    ours = read(ours_path)
    ours.validate(full=True)
    original = read(source)
    assert ours.schema.equals(original.schema, check_metadata=True), (ours.schema, original.schema)
    assert ours.equals(original), f"values differ: {case_dir}"
    notes = f"{ours.num_rows} rows, {len(ours.to_batches())} batches"
    if os.path.exists(os.path.join(case_dir, "dataset_info.json")):
        import datasets
        try:
            ds = datasets.load_from_disk(case_dir)
        except ValueError as e:
            # LeRobot's custom VideoFrame feature: datasets rejects the original the same way.
            if "Feature type 'VideoFrame' not found" not in str(e):
                raise
            return notes + ", load_from_disk: custom VideoFrame feature unknown to datasets " \
                           "(same as the original)"

        assert ds.data.table.equals(original), f"datasets table differs: {case_dir}"
        if len(ds):
            ds[0]  # decodes features (e.g. Image -> PIL)
        notes += f", load_from_disk OK ({len(ds)} rows, features {list(ds.features)})"
    return notes


def main():
    root = sys.argv[1]
    count = 0
    for case in sorted(os.listdir(root)):
        for compression in sorted(os.listdir(os.path.join(root, case))):
            case_dir = os.path.join(root, case, compression)
            print(f"{case}/{compression}: {check(case_dir)}")
            count += 1
    if count == 0:
        sys.exit("no rewritten files found")
    print(f"OK: {count} files read by pyarrow {pa.__version__}")


if __name__ == "__main__":
    main()

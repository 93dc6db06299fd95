"""Writes tests/data/parquet/images.parquet with the real `datasets`: the four small test images
of tests/data/images/gen (PNG, JPEG, PNG, WebP) as an embedded Image column with a ground_truth
string, in two row groups (datasets' writer, SNAPPY). The C++ pack tests (fault sweeps) pack it
as a Hub-layout folder. Kept in the repository; rerun only to change it.

    .venv/bin/python tests/data/parquet/make_parquet.py
"""
import pathlib

import datasets
import pyarrow.parquet as pq

HERE = pathlib.Path(__file__).resolve().parent
GEN = HERE.parent / "images" / "gen"
NAMES = ["gray4.png", "subsampling444.jpg", "palette4.png", "orientation8.webp"]


def main() -> None:
    ds = datasets.Dataset.from_dict(
        {"image": [{"bytes": (GEN / n).read_bytes(), "path": n} for n in NAMES],
         "ground_truth": [f"page {i}" for i in range(len(NAMES))]},
        features=datasets.Features({"image": datasets.Image(),
                                    "ground_truth": datasets.Value("string")}))
    pq.write_table(ds.data.table, HERE / "images.parquet", row_group_size=2)


if __name__ == "__main__":
    main()

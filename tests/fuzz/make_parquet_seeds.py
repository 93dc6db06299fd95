"""Writes the parquet_fuzz target's seed files into tests/fuzz/corpus/parquet/ with pyarrow: small
files in the layouts real writers produce (every codec docfeed reads, data page v1 and v2,
dictionary and plain, several pages and row groups, nested types, nulls, no stored Arrow schema).
Run once when the reader gains a feature; the files are kept in the repository.

    .venv/bin/python tests/fuzz/make_parquet_seeds.py
"""
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

OUT = pathlib.Path(__file__).resolve().parent / "corpus" / "parquet"


def table(rows: int) -> pa.Table:
    return pa.table({
        "i": pa.array([None if k % 5 == 0 else k * 7 - 20 for k in range(rows)], pa.int32()),
        "u": pa.array([k * 123457 for k in range(rows)], pa.uint64()),
        "f": pa.array([k / 3 for k in range(rows)], pa.float32()),
        "b": [k % 3 == 0 for k in range(rows)],
        "t": pa.array([k * 1000 for k in range(rows)], pa.timestamp("ms", tz="UTC")),
        "s": [None if k % 4 == 1 else "w" * (k % 6) for k in range(rows)],
        "image": pa.array([{"bytes": bytes([k]) * (k % 9), "path": f"{k}.png"} if k % 7 else None
                           for k in range(rows)],
                          pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        "l": pa.array([None if k % 6 == 2 else list(range(k % 4)) for k in range(rows)],
                      pa.list_(pa.int64())),
        "n": pa.array([{"w": [{"x": "a", "y": [k, None]}] * (k % 3), "c": k} for k in range(rows)],
                      pa.struct([("w", pa.list_(pa.struct([("x", pa.string()),
                                                           ("y", pa.list_(pa.int16()))]))),
                                 ("c", pa.int8())])),
        "fl": pa.array([[k, k + 1] for k in range(rows)], pa.list_(pa.float64(), 2)),
    }, metadata={"huggingface": '{"info": {"features": {"image": {"_type": "Image"}}}}'})


LAYOUTS = {
    "snappy-v1-dict": dict(compression="snappy"),
    "zstd-v2-dict": dict(compression="zstd", data_page_version="2.0"),
    "gzip-v1-plain": dict(compression="gzip", use_dictionary=False),
    "none-v2-plain": dict(compression="none", data_page_version="2.0", use_dictionary=False),
    "brotli-v1": dict(compression="brotli"),
    "lz4raw-v2": dict(compression="lz4", data_page_version="2.0"),
    "pages-rowgroups": dict(compression="none", data_page_size=64, row_group_size=7,
                            write_batch_size=4, dictionary_pagesize_limit=32),
    "no-arrow-schema": dict(compression="snappy", store_schema=False),
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, layout in LAYOUTS.items():
        pq.write_table(table(24), OUT / f"{name}.parquet", **layout)
    pq.write_table(pa.table({"x": pa.array([], pa.int64())}), OUT / "empty.parquet")


if __name__ == "__main__":
    main()

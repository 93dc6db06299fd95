"""docfeed's Parquet reader (src/format/parquet) against pyarrow.parquet, the reference.

Each file is written by pyarrow in one of the layouts real writers produce (codecs, data page
v1/v2, dictionary or plain, many pages and row groups, nested types and nulls, with and without
the stored Arrow schema); `parquet_to_arrow` (tests/format/parquet) rewrites it with docfeed's
reader as an Arrow stream, which must equal `pq.read_table` of the file: types, names, nulls,
values and schema metadata. Broken files must give an error, never a crash.
"""
import datetime
import os
import pathlib
import random
import subprocess

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from conftest import docfeed_bin


def tool() -> pathlib.Path:
    return docfeed_bin().parent / "parquet_to_arrow"


def docfeed_read(path: pathlib.Path, tmp_path: pathlib.Path) -> pa.Table:
    out = tmp_path / (path.name + ".arrow")
    proc = subprocess.run([str(tool()), str(path), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return ipc.open_stream(out).read_all()


def assert_same(ours: pa.Table, ref: pa.Table):
    assert ours.schema.equals(ref.schema, check_metadata=True), f"{ours.schema}\n!=\n{ref.schema}"
    assert ours.num_rows == ref.num_rows
    assert ours.equals(ref), "values differ"


def every_type_table(rows: int = 300) -> pa.Table:
    rnd = random.Random(7)

    def maybe(v, p=0.2):
        return None if rnd.random() < p else v

    ts = [maybe(datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=rnd.randrange(10**8)))
          for _ in range(rows)]
    return pa.table({
        "int8": pa.array([maybe(rnd.randrange(-128, 128)) for _ in range(rows)], pa.int8()),
        "int16": pa.array([maybe(rnd.randrange(-2**15, 2**15)) for _ in range(rows)], pa.int16()),
        "int32": pa.array([maybe(rnd.randrange(-2**31, 2**31)) for _ in range(rows)], pa.int32()),
        "int64": pa.array([maybe(rnd.randrange(-2**63, 2**63)) for _ in range(rows)], pa.int64()),
        "uint8": pa.array([maybe(rnd.randrange(256)) for _ in range(rows)], pa.uint8()),
        "uint16": pa.array([maybe(rnd.randrange(2**16)) for _ in range(rows)], pa.uint16()),
        "uint32": pa.array([maybe(rnd.randrange(2**32)) for _ in range(rows)], pa.uint32()),
        "uint64": pa.array([maybe(rnd.randrange(2**64)) for _ in range(rows)], pa.uint64()),
        "float32": pa.array([maybe(rnd.uniform(-1e6, 1e6)) for _ in range(rows)], pa.float32()),
        "float64": pa.array([maybe(rnd.uniform(-1e300, 1e300)) for _ in range(rows)]),
        "bool": pa.array([maybe(rnd.random() < 0.5) for _ in range(rows)]),
        "date32": pa.array([maybe(datetime.date(2000, 1, 1) + datetime.timedelta(days=rnd.randrange(9000)))
                            for _ in range(rows)], pa.date32()),
        "date64": pa.array([maybe(datetime.date(2000, 1, 1) + datetime.timedelta(days=rnd.randrange(9000)))
                            for _ in range(rows)], pa.date64()),
        "ts_s": pa.array(ts, pa.timestamp("s")),
        "ts_ms_utc": pa.array(ts, pa.timestamp("ms", tz="UTC")),
        "ts_us": pa.array(ts, pa.timestamp("us")),
        "ts_ns_tz": pa.array(ts, pa.timestamp("ns", tz="Europe/Paris")),
        "string": pa.array([maybe("x" * rnd.randrange(40) + str(i)) for i in range(rows)]),
        "large_string": pa.array([maybe("ü" * rnd.randrange(5)) for _ in range(rows)], pa.large_string()),
        "binary": pa.array([maybe(rnd.randbytes(rnd.randrange(300))) for _ in range(rows)], pa.binary()),
        "large_binary": pa.array([maybe(rnd.randbytes(3)) for _ in range(rows)], pa.large_binary()),
        "fixed_binary": pa.array([maybe(rnd.randbytes(4)) for _ in range(rows)], pa.binary(4)),
        "float16": pa.array([maybe(rnd.uniform(-10, 10)) for _ in range(rows)], pa.float32()).cast(pa.float16()),
        "nulls": pa.nulls(rows),
        "list_int": pa.array([maybe([maybe(rnd.randrange(100)) for _ in range(rnd.randrange(4))])
                              for _ in range(rows)], pa.list_(pa.int64())),
        "large_list": pa.array([maybe(["a"] * rnd.randrange(3)) for _ in range(rows)],
                               pa.large_list(pa.string())),
        "fixed_list": pa.array([maybe([rnd.random(), rnd.random()]) for _ in range(rows)],
                               pa.list_(pa.float64(), 2)),
        "image": pa.array([maybe({"bytes": maybe(rnd.randbytes(rnd.randrange(1, 2000))),
                                  "path": maybe(f"img{i}.png")}) for i in range(rows)],
                          pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        "nested": pa.array([maybe({"words": maybe([maybe({"text": "w", "box": [1, 2, 3, 4]})
                                                   for _ in range(rnd.randrange(3))]),
                                   "n": maybe(rnd.randrange(9))})
                            for _ in range(rows)],
                           pa.struct([("words", pa.list_(pa.struct([("text", pa.string()),
                                                                    ("box", pa.list_(pa.int32()))]))),
                                      ("n", pa.int32())])),
        "list_list": pa.array([maybe([maybe([rnd.randrange(5)] * rnd.randrange(3))
                                      for _ in range(rnd.randrange(3))]) for _ in range(rows)],
                              pa.list_(pa.list_(pa.int16()))),
    }, metadata={"huggingface": '{"info": {"features": {}}}'})


LAYOUTS = [
    dict(compression="snappy"),  # pyarrow's and datasets' default
    dict(compression="zstd", data_page_version="2.0"),
    dict(compression="gzip", use_dictionary=False),
    dict(compression="none", data_page_version="2.0", use_dictionary=False),
    dict(compression="brotli"),
    dict(compression="lz4"),  # LZ4_RAW
    # Many small pages and row groups; the dictionary overflows and falls back to PLAIN.
    dict(compression="snappy", data_page_size=512, row_group_size=37, dictionary_pagesize_limit=256,
         write_batch_size=16),
    dict(compression="zstd", data_page_version="2.0", data_page_size=300, row_group_size=64),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda d: "-".join(f"{k}={v}" for k, v in d.items()))
def test_every_type_equals_pyarrow(tmp_path, layout):
    path = tmp_path / "t.parquet"
    pq.write_table(every_type_table(), path, **layout)
    assert_same(docfeed_read(path, tmp_path), pq.read_table(path))


def test_without_the_stored_arrow_schema_types_come_from_the_parquet_schema(tmp_path):
    # store_schema=False: no ARROW:schema; pyarrow then derives the types as docfeed does
    # (timestamps as stored: ms/us/ns, UTC when adjusted; date64 as date32, uint types kept).
    table = every_type_table(120)
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, store_schema=False)
    ref = pq.read_table(path)
    assert b"ARROW:schema" not in (pq.ParquetFile(path).metadata.metadata or {})
    assert_same(docfeed_read(path, tmp_path), ref)


def test_a_dictionary_typed_column_is_read_as_its_values(tmp_path):
    # A pandas categorical is an Arrow dictionary column, which docfeed does not model: it reads
    # the values (the Parquet column is plain strings with dictionary pages).
    table = pa.table({"label": pa.array(["a", "b", None, "a"]).dictionary_encode(),
                      "x": [1, 2, 3, 4]})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    ours = docfeed_read(path, tmp_path)
    ref = pq.read_table(path)
    assert ours.column("label").to_pylist() == ref.column("label").to_pylist()
    assert ours.schema.field("label").type == pa.string()
    assert ours.column("x").equals(ref.column("x"))


def test_large_values_span_their_own_pages(tmp_path):
    # Document images: values far above the page size, several row groups.
    rnd = random.Random(3)
    blobs = [rnd.randbytes(rnd.randrange(200_000, 1_500_000)) for _ in range(12)]
    table = pa.table({"image": pa.array([{"bytes": b, "path": f"{i}.jpg"} for i, b in enumerate(blobs)]),
                      "text": [f"row {i}" for i in range(12)]})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=5)
    assert_same(docfeed_read(path, tmp_path), pq.read_table(path))


def test_broken_files_are_errors_never_crashes(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(every_type_table(40), path, row_group_size=16)
    good = path.read_bytes()
    rnd = random.Random(11)
    cases = [good[:n] for n in sorted(rnd.sample(range(len(good)), 40))]
    for _ in range(120):
        data = bytearray(good)
        for _ in range(rnd.randrange(1, 4)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        cases.append(bytes(data))
    out = tmp_path / "out.arrow"
    errors = 0
    for i, data in enumerate(cases):
        bad = tmp_path / f"bad{i}.parquet"
        bad.write_bytes(data)
        proc = subprocess.run([str(tool()), str(bad), str(out)], capture_output=True, text=True,
                              timeout=60)
        # 0: the damage fell in bytes that do not matter (e.g. statistics); 1: an error.
        assert proc.returncode in (0, 1), (i, proc.returncode, proc.stderr[-2000:])
        if proc.returncode == 1:
            errors += 1
            assert str(bad) in proc.stderr
    assert errors >= 40  # every truncation at least


def test_unsupported_encodings_are_named(tmp_path):
    table = pa.table({"x": pa.array(range(100), pa.int64())})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, use_dictionary=False, column_encoding={"x": "DELTA_BINARY_PACKED"})
    proc = subprocess.run([str(tool()), str(path), str(tmp_path / "o.arrow")], capture_output=True,
                          text=True)
    assert proc.returncode == 1
    assert "DELTA_BINARY_PACKED" in proc.stderr and "'x'" in proc.stderr, proc.stderr

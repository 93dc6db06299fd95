#!/usr/bin/env python3
"""Regenerates tests/data/arrow/pyarrow_cases/: small Arrow IPC streams written by pyarrow, plus
expected.json holding the values pyarrow reads back from each file (not values from docfeed).

Run from the repository root with the project virtualenv:
    .venv/bin/python tests/data/arrow/make_pyarrow_cases.py
Written with pyarrow 26.0.1. The output is deterministic for a given pyarrow version.

expected.json maps file name -> {"schema": [[name, pyarrow type string, nullable], ...],
"metadata": {key: value}, "batches": [{"num_rows": n, "columns": {name: [values]}}]}.
Value encoding (mirrored by tests/format/arrow/pyarrow_cases_test.cc): null -> null,
binary-like -> lowercase hex string, string -> string, halffloat -> float (exact),
date/timestamp -> integer, list -> list, struct -> object.
"""

import datetime
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyarrow_cases")


def to_json(arr):
    t = arr.type
    if pa.types.is_null(t):
        return [None] * len(arr)
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).to_pylist()
    if pa.types.is_date64(t) or pa.types.is_timestamp(t):
        return arr.cast(pa.int64()).to_pylist()
    if pa.types.is_float16(t):
        return arr.cast(pa.float32()).to_pylist()
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or
            pa.types.is_fixed_size_binary(t)):
        return [None if v is None else v.hex() for v in arr.to_pylist()]
    valid = arr.is_valid().to_pylist()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = to_json(arr.values)
        offsets = arr.offsets.to_pylist()
        return [values[offsets[i]:offsets[i + 1]] if valid[i] else None
                for i in range(len(arr))]
    if pa.types.is_fixed_size_list(t):
        values = to_json(arr.values)
        n = t.list_size
        return [values[i * n:(i + 1) * n] if valid[i] else None for i in range(len(arr))]
    if pa.types.is_struct(t):
        children = {t.field(j).name: to_json(arr.field(j)) for j in range(t.num_fields)}
        return [{k: v[i] for k, v in children.items()} if valid[i] else None
                for i in range(len(arr))]
    return arr.to_pylist()


def describe(path):
    with ipc.open_stream(path) as reader:
        schema = reader.schema
        batches = list(reader)
    return {
        "schema": [[f.name, str(f.type), f.nullable] for f in schema],
        "metadata": {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()},
        "batches": [{"num_rows": b.num_rows,
                     "columns": {name: to_json(b.column(i))
                                 for i, name in enumerate(b.schema.names)}}
                    for b in batches],
    }


def write(name, schema, batches, **options):
    path = os.path.join(OUT, name)
    with ipc.new_stream(path, schema, options=ipc.IpcWriteOptions(**options)) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return path


def mixed_case():
    schema = pa.schema([
        ("id", pa.int64()),
        ("text", pa.string()),
        ("blob", pa.binary()),
        ("tags", pa.list_(pa.int32())),
        ("pair", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        ("score", pa.float32()),
        ("flag", pa.bool_()),
    ], metadata={"huggingface": '{"info": {"features": {}}}', "origin": "make_pyarrow_cases"})
    # Repetitive values so that compression actually shrinks most buffers.
    def batch(start, n):
        return pa.record_batch([
            pa.array([None if i % 7 == 3 else i * 1000 for i in range(start, start + n)],
                     pa.int64()),
            pa.array([None if i % 5 == 4 else "row %d " % i + "abc" * (i % 9)
                      for i in range(start, start + n)]),
            pa.array([bytes([i % 256]) * (i % 13) for i in range(start, start + n)],
                     pa.binary()),
            pa.array([None if i % 11 == 2 else list(range(i % 4)) for i in range(start, start + n)],
                     pa.list_(pa.int32())),
            pa.array([None if i % 6 == 1 else {"a": i, "b": None if i % 4 == 0 else "b%d" % i}
                      for i in range(start, start + n)],
                     pa.struct([("a", pa.int32()), ("b", pa.string())])),
            pa.array([i / 8.0 for i in range(start, start + n)], pa.float32()),
            pa.array([None if i % 9 == 5 else i % 3 == 0 for i in range(start, start + n)]),
        ], schema=schema)
    return schema, [batch(0, 100), batch(100, 57)]


def large_case():
    fields = [
        ("lb", pa.large_binary()),
        ("ls", pa.large_string()),
        ("ll", pa.large_list(pa.large_string())),
        ("fsb", pa.binary(4)),
        ("nested", pa.list_(pa.list_(pa.int64()))),
        ("vec", pa.list_(pa.float32(), 3)),
        ("deep", pa.struct([("x", pa.struct([("y", pa.list_(pa.int16()))])), ("z", pa.uint8())])),
        ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()),
        ("u16", pa.uint16()), ("u32", pa.uint32()), ("u64", pa.uint64()),
        ("f16", pa.float16()), ("f64", pa.float64()),
        ("d32", pa.date32()), ("d64", pa.date64()),
        ("ts", pa.timestamp("ms", tz="UTC")), ("ts_naive", pa.timestamp("us")),
        ("nothing", pa.null()),
    ]
    schema = pa.schema([pa.field(name, t) for name, t in fields] +
                       [pa.field("required", pa.int64(), nullable=False)])

    def batch(start, n):
        r = range(start, start + n)
        return pa.record_batch([
            pa.array([None if i % 4 == 1 else b"\x00\xffLB" * (i % 3) for i in r], pa.large_binary()),
            pa.array([None if i % 5 == 2 else "ls-%d-é" % i for i in r], pa.large_string()),
            pa.array([None if i % 6 == 0 else ["s%d" % j for j in range(i % 3)] for i in r],
                     pa.large_list(pa.large_string())),
            pa.array([None if i % 3 == 2 else bytes([i % 256, 1, 2, 255]) for i in r], pa.binary(4)),
            pa.array([None if i % 7 == 6 else [[i, None], [], None] if i % 2 else [[i * 2]]
                      for i in r], pa.list_(pa.list_(pa.int64()))),
            pa.array([None if i % 5 == 0 else [i + 0.5, None, -1.25] for i in r],
                     pa.list_(pa.float32(), 3)),
            pa.array([None if i % 8 == 7 else {"x": None if i % 3 == 0 else {"y": [i, -i]},
                                               "z": i % 256} for i in r],
                     schema.field("deep").type),
            pa.array([(i % 256) - 128 for i in r], pa.int8()),
            pa.array([-i * 100 for i in r], pa.int16()),
            pa.array([None if i % 2 else -i * 100000 for i in r], pa.int32()),
            pa.array([65535 - i for i in r], pa.uint16()),
            pa.array([4294967295 - i for i in r], pa.uint32()),
            pa.array([18446744073709551615 - i for i in r], pa.uint64()),
            pa.array(np.array([i * 0.25 - 3 for i in r], dtype=np.float16), pa.float16()),
            pa.array([i * 1e100 for i in r], pa.float64()),
            pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in r],
                     pa.date32()),
            pa.array([(19_675 + i) * 86_400_000 for i in r], pa.date64()),
            pa.array([None if i % 4 == 0 else 1_700_000_000_123 + i for i in r],
                     pa.timestamp("ms", tz="UTC")),
            pa.array([1_700_000_000_123_456 + i for i in r], pa.timestamp("us")),
            pa.nulls(n),
            pa.array([i for i in r], pa.int64()),
        ], schema=schema)
    return schema, [batch(0, 20), batch(20, 0), batch(20, 9)]


def main():
    os.makedirs(OUT, exist_ok=True)
    expected = {}
    schema, batches = mixed_case()
    for name, options in [
        ("mixed_uncompressed.arrow", {}),
        ("mixed_zstd.arrow", {"compression": "zstd"}),
        ("mixed_lz4.arrow", {"compression": "lz4"}),
        ("mixed_legacy_v4.arrow", {"use_legacy_format": True,
                                   "metadata_version": ipc.MetadataVersion.V4}),
    ]:
        expected[name] = describe(write(name, schema, batches, **options))
    schema, batches = large_case()
    expected["large_types.arrow"] = describe(write("large_types.arrow", schema, batches))
    expected["large_types_zstd.arrow"] = describe(
        write("large_types_zstd.arrow", schema, batches, compression="zstd"))
    # Schema only, no batches.
    expected["schema_only.arrow"] = describe(write("schema_only.arrow", schema, []))
    # Dictionary-encoded column: docfeed must refuse it with Unsupported naming the field.
    dict_schema = pa.schema([("label", pa.dictionary(pa.int8(), pa.string()))])
    dict_batch = pa.record_batch([pa.array(["a", "b", "a"]).dictionary_encode()
                                  .cast(pa.dictionary(pa.int8(), pa.string()))],
                                 schema=dict_schema)
    write("dictionary.arrow", dict_schema, [dict_batch])
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=None, separators=(",", ":"), sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

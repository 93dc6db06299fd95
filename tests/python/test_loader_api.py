"""The typed Python layer of docfeed.Loader: exceptions chosen by status code, typed and
range-checked arguments, complete stats(), and the dataset facts read without a loader.

Each error class is triggered by a real failure (a missing dataset, a corrupted shard, an
argument out of range, every batch buffer held, a dataset preprocessed for another size, a
closed loader), and the stats() keys are held against the C++ struct's declaration in
include/docfeed/loader.h. Runs in .venv/train (`make test-python`).
"""
import json
import pathlib
import re
import subprocess
import time

import pytest

import docfeed
from docfeed import _docfeed
from docfeed import errors

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"
SIZE = (64, 48)


def pack(src, out, *args):
    proc = subprocess.run([docfeed.cli_path(), "pack", str(src), "-o", str(out), *map(str, args)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def original_ds(tmp_path_factory):
    return pack(SAMPLE_DOCS, tmp_path_factory.mktemp("orig") / "ds")


@pytest.fixture(scope="module")
def preprocessed_ds(tmp_path_factory):
    return pack(SAMPLE_DOCS, tmp_path_factory.mktemp("pre") / "ds", "--preprocess", "donut",
                "--size", f"{SIZE[0]}x{SIZE[1]}")


def loader(path, **kw):
    kw.setdefault("batch_size", 2)
    kw.setdefault("image_size", SIZE)
    kw.setdefault("num_threads", 1)
    return docfeed.Loader(path, **kw)


# ---- the exception hierarchy ----

def test_every_class_is_a_docfeed_error_and_its_builtin():
    expected = {
        errors.InvalidArgumentError: ValueError, errors.NotFoundError: FileNotFoundError,
        errors.DataError: ValueError, errors.StorageError: OSError,
        errors.ResourceExhaustedError: RuntimeError, errors.CancelledError: RuntimeError,
        errors.InternalError: RuntimeError, errors.AlreadyExistsError: FileExistsError,
        errors.FailedPreconditionError: RuntimeError, errors.LoaderClosedError: RuntimeError,
    }
    for cls, builtin in expected.items():
        assert issubclass(cls, docfeed.Error) and issubclass(cls, builtin), cls
        assert getattr(docfeed, cls.__name__) is cls
    # One class per C++ StatusCode except kOk (include/docfeed/status.h), plus "Closed".
    header = (REPO / "include" / "docfeed" / "status.h").read_text()
    enum = re.sub(r"//[^\n]*", "", re.search(r"enum class StatusCode[^{]*\{(.*?)\};", header,
                                             re.S).group(1))
    codes = {m for m in re.findall(r"\bk(\w+)", enum) if m != "Ok"}
    assert set(errors.BY_CODE) == codes | {"Closed"}


def test_every_status_code_raises_its_class():
    """The binding's table against the enum: value i of StatusCode (status.h order) raises
    BY_CODE[its name], with .code set and the message kept."""
    header = (REPO / "include" / "docfeed" / "status.h").read_text()
    enum = re.sub(r"//[^\n]*", "", re.search(r"enum class StatusCode[^{]*\{(.*?)\};", header,
                                             re.S).group(1))
    names = re.findall(r"\bk(\w+)", enum)
    assert names[0] == "Ok"
    for value, name in enumerate(names[1:], start=1):
        with pytest.raises(errors.BY_CODE[name]) as info:
            _docfeed._raise_status(value, "what went wrong")
        assert type(info.value) is errors.BY_CODE[name] and info.value.code == name
        assert "what went wrong" in str(info.value)
    with pytest.raises(docfeed.InvalidArgumentError):
        _docfeed._raise_status(len(names), "no such code")


def test_missing_dataset_is_not_found(tmp_path):
    with pytest.raises(docfeed.NotFoundError) as info:
        loader(tmp_path / "missing")
    assert isinstance(info.value, FileNotFoundError) and info.value.code == "NotFound"
    assert "missing" in str(info.value)
    with pytest.raises(docfeed.NotFoundError):
        _docfeed.dataset_info(str(tmp_path / "missing"))


def test_corrupt_shard_is_a_data_error(original_ds, tmp_path):
    broken = tmp_path / "broken"
    subprocess.run(["cp", "-r", str(original_ds), str(broken)], check=True)
    data = sorted(broken.glob("data-*.arrow"))[0]
    raw = bytearray(data.read_bytes())
    # Flip a byte in every 4 KiB stretch past the schema: every stored image changes.
    for offset in range(8192, len(raw) - 1024, 4096):
        raw[offset] ^= 0xFF
    data.write_bytes(bytes(raw))
    with pytest.raises(docfeed.DataError) as info:
        with loader(broken, shuffle=False) as l:
            for _ in l:
                pass
    assert isinstance(info.value, ValueError) and info.value.code == "Corruption"
    assert "data-00000" in str(info.value)


def test_corrupt_manifest_is_a_data_error(original_ds, tmp_path):
    broken = tmp_path / "broken"
    subprocess.run(["cp", "-r", str(original_ds), str(broken)], check=True)
    manifest = broken / "docfeed.json"
    manifest.write_text(manifest.read_text().replace('"num_samples": 20', '"num_samples": 21'))
    with pytest.raises(docfeed.DataError) as info:
        _docfeed.dataset_info(str(broken))
    assert info.value.code == "Corruption" and "docfeed.json" in str(info.value)


def test_pool_exhausted_is_resource_exhausted(preprocessed_ds):
    l = loader(preprocessed_ds, max_held=2, prefetch=1, shuffle=False)
    held = [l.next() for _ in range(3)]  # prefetch + max_held buffers
    with pytest.raises(docfeed.ResourceExhaustedError) as info:
        l.next()
    assert isinstance(info.value, RuntimeError) and info.value.code == "ResourceExhausted"
    assert "max_held" in str(info.value)
    del held
    l.close()


def test_wrong_size_for_a_preprocessed_dataset_is_failed_precondition(preprocessed_ds):
    with pytest.raises(docfeed.FailedPreconditionError) as info:
        loader(preprocessed_ds, image_size=(SIZE[0] + 2, SIZE[1]))
    assert isinstance(info.value, RuntimeError) and info.value.code == "FailedPrecondition"


def test_closed_loader_and_released_batch(preprocessed_ds):
    l = loader(preprocessed_ds)
    raw = l._core.next()
    raw.release()
    with pytest.raises(docfeed.LoaderClosedError, match="released"):
        raw.pixels()
    l.close()
    with pytest.raises(docfeed.LoaderClosedError, match="closed"):
        l.next()


# ---- typed, range-checked arguments (issue 14) ----

@pytest.mark.parametrize("name,value,range_text", [
    ("batch_size", -1, "1..4294967295"), ("batch_size", 10**12, "1..4294967295"),
    ("batch_size", 0, "1..4294967295"),
    ("seed", -1, "0..18446744073709551615"), ("seed", 2**70, "0..18446744073709551615"),
    ("rank", -1, "0..4294967295"), ("world_size", -1, "1..4294967295"),
    ("max_bad_samples", -1, "0..18446744073709551615"), ("label_length", -5, "0..4294967295"),
    ("num_threads", -1, "0..2147483647"), ("prefetch", 0, "1..2147483647"),
    ("max_held", 2**40, "1..2147483647"),
])
def test_out_of_range_arguments_name_the_parameter_and_range(preprocessed_ds, name, value,
                                                             range_text):
    kw = {name: value}
    if name == "rank":
        kw["world_size"] = 1
    if name == "world_size":
        kw["rank"] = 0
    with pytest.raises(ValueError) as info:
        loader(preprocessed_ds, **kw)
    assert isinstance(info.value, docfeed.InvalidArgumentError)
    assert name in str(info.value) and range_text in str(info.value), str(info.value)


def test_non_integers_are_refused_not_truncated(preprocessed_ds):
    for name, value in [("batch_size", 2.5), ("seed", "1"), ("label_length", 1.0)]:
        with pytest.raises(docfeed.InvalidArgumentError, match=name):
            loader(preprocessed_ds, **{name: value})
    import numpy as np

    l = loader(preprocessed_ds, batch_size=np.int64(4), seed=np.uint32(3))
    assert l.next()["pixel_values"].shape[0] == 4
    l.close()


def test_set_epoch_and_state_dict_values_are_checked(preprocessed_ds):
    l = loader(preprocessed_ds, shuffle=False)
    with pytest.raises(docfeed.InvalidArgumentError, match=r"epoch.*0\.\.18446744073709551615"):
        l.set_epoch(-1)
    with pytest.raises(docfeed.InvalidArgumentError, match="epoch"):
        l.set_epoch(1.5)
    state = l.state_dict()
    for key, value in [("position", 2.7), ("epoch", 1.0), ("position", -4), ("seed", 2**64)]:
        bad = dict(state, **{key: value})
        with pytest.raises(ValueError, match=key):
            l.load_state_dict(bad)
    l.load_state_dict(dict(state, position=4))  # a valid one still works
    assert l.next().sample_ids.tolist() == [4, 5]
    l.close()


def test_the_binding_takes_keyword_only_typed_arguments(preprocessed_ds):
    path = str(preprocessed_ds)
    with pytest.raises(TypeError):
        _docfeed.Loader(path, SIZE[0], SIZE[1])  # positional options are refused
    with pytest.raises(TypeError):
        _docfeed.Loader({"path": path})  # the old options dict
    with pytest.raises(TypeError):
        _docfeed.Loader(path, height=SIZE[0], width=SIZE[1], batch_size="2")
    with pytest.raises(ValueError, match="pad"):
        _docfeed.Loader(path, height=SIZE[0], width=SIZE[1], pad="left")
    core = _docfeed.Loader(path, height=SIZE[0], width=SIZE[1], batch_size=3, shuffle=False,
                           num_threads=1)
    assert core.next().size == 3 and core.num_samples == 20
    core.close()


# ---- stats() ----

def cpp_stats_fields():
    """The field names of struct LoaderStats, read from include/docfeed/loader.h."""
    header = (REPO / "include" / "docfeed" / "loader.h").read_text()
    body = re.search(r"struct LoaderStats \{(.*?)\n\};", header, re.S).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    return re.findall(r"(\w+)\s*(?:=[^;]*)?;", body)


def settled_stats(l):
    """stats() once two snapshots 50 ms apart agree (the workers are idle)."""
    last = None
    for _ in range(100):
        now = l.stats()
        if now == last:
            return now
        last = now
        time.sleep(0.05)
    return last


def test_stats_has_every_field_of_the_cpp_struct(original_ds):
    fields = cpp_stats_fields()
    assert "decode_resize" in fields and len(fields) >= 15
    assert list(_docfeed.STATS_FIELDS) == fields
    l = loader(original_ds, shuffle=False, prefetch=1)
    assert list(l.stats()) == fields
    l.close()


def test_stats_numbers_are_consistent(original_ds, preprocessed_ds):
    # The sample documents are stored without an EXIF rotation, so the original-image dataset
    # goes through the fused decode + resize.
    l = loader(original_ds, shuffle=False, prefetch=1, drop_last=False)
    n = sum(b["pixel_values"].shape[0] for b in l)
    s = settled_stats(l)
    count = lambda stage: s[stage][0]  # noqa: E731
    assert n == 20 and s["samples"] >= n
    assert count("decode_resize") > 0
    assert count("decode_resize") + count("resize") == s["samples"]
    assert count("pad_normalize") == s["samples"] and count("read") == s["samples"]
    assert s["bad_samples"] == 0 and s["bad_sample_errors"] == []
    assert all(isinstance(s[k], tuple) and s[k][1] >= 0 for k in ("read", "decode_resize"))
    l.close()
    l = loader(preprocessed_ds, shuffle=False, prefetch=1)
    for _ in l:
        pass
    s = settled_stats(l)
    assert s["decode_resize"][0] == 0 and s["resize"][0] == 0
    assert s["decode"][0] == s["samples"] > 0
    l.close()


# ---- dataset facts without a loader ----

def test_dataset_info_reads_the_manifest(original_ds, preprocessed_ds):
    info = _docfeed.dataset_info(str(original_ds))
    manifest = json.loads((original_ds / "docfeed.json").read_text())
    assert info["num_samples"] == manifest["num_samples"] == 20
    assert info["preprocess"] is None
    assert info["label_column"] == manifest.get("label_column", "")
    assert [c[0] for c in info["columns"]] == [c["name"] for c in manifest["columns"]]
    pre = _docfeed.dataset_info(str(preprocessed_ds))["preprocess"]
    assert pre == {"preset": "donut", "height": SIZE[0], "width": SIZE[1],
                   "align_long_axis": False, "hf_version": 4, "backend": "pil"}

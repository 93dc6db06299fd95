"""`pack --preprocess pix2struct --stored-form patches`: the processor's whole output, stored.

Runs in both transformers environments (.venv/train, 4.57.6; .venv/hf5, 5.x). A few sample
documents and generated pages (a transparent RGBA page, a grayscale page, a JPEG with an EXIF
quarter turn) are packed three ways: as they are, with the page form and with the patches form.
The references are the running generation's numpy processor (4.x Pix2StructImageProcessor, 5.x
Pix2StructImageProcessorPil) given the original pages as `datasets.load_from_disk(originals)[i]
["image"]`, never docfeed's own output:

* `datasets.load_from_disk(patches)[i]["image"]` is a mode "F" image (Pillow reads the float PFM)
  whose np.asarray is the processor's flattened_patches rows for that page, without its zero
  padding rows, bit for bit;
* docfeed.Loader on the patches form gives batches identical (torch.equal) to the Loader on the
  page form and to the processor;
* a Loader asking for another max_patches, patch size or generation is refused
  (FailedPrecondition naming the dataset, what it holds and how to re-pack), and the CLI's
  verify, inspect and bench take the new codec.

On a CPU where torch dispatches its DEFAULT kernels the processor comparisons skip, saying so
(docs/pix2struct-preprocessing.md, "Exactness").
"""
import io
import json

import pytest

from conftest import SAMPLE_DOCS, run_docfeed

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
from PIL import Image  # noqa: E402

import docfeed  # noqa: E402
import docfeed.hf  # noqa: E402

from pix2struct_reference import (HF_VERSION, Processor, skip_unless_exact_kernels,  # noqa: E402
                                  write_generated_pages)

MAX_PATCHES = 128  # small, to keep the reference fast
PATCH = {"height": 16, "width": 8}  # not square, so height and width cannot be swapped unseen
ROW_VALUES = 2 + 3 * PATCH["height"] * PATCH["width"]


def write_source(folder):
    """Three sample documents and three generated pages for the generation's conversions."""
    folder.mkdir(parents=True)
    for name in ("invoice_sample.jpg", "simple-invoice.png"):
        (folder / name).write_bytes((SAMPLE_DOCS / "invoices" / name).read_bytes())
    (folder / "receipt.png").write_bytes(
        sorted((SAMPLE_DOCS / "receipts").glob("*.png"))[0].read_bytes())
    write_generated_pages(folder, seed=5)


@pytest.fixture(scope="module")
def packs(tmp_path_factory):
    """{"originals", "page", "patches"}: one source packed as it is and in both stored forms."""
    root = tmp_path_factory.mktemp("pix2struct-patches")
    source = root / "src"
    write_source(source)
    out = {name: root / name for name in ("originals", "page", "patches")}
    run_docfeed("pack", source, "-o", out["originals"])
    run_docfeed("pack", source, "-o", out["page"], "--preprocess", "pix2struct",
                "--hf-version", str(HF_VERSION))
    run_docfeed("pack", source, "-o", out["patches"], "--preprocess", "pix2struct",
                "--stored-form", "patches", "--max-patches", str(MAX_PATCHES), "--patch-size",
                f"{PATCH['height']}x{PATCH['width']}", "--hf-version", str(HF_VERSION))
    return out


def make_loader(path, **kwargs):
    args = dict(batch_size=4, preset="pix2struct", max_patches=MAX_PATCHES, patch_size=PATCH,
                hf_version=HF_VERSION, seed=3, num_threads=2, drop_last=False)
    args.update(kwargs)
    return docfeed.Loader(path, **args)


def batches(loader):
    out = []
    for b in loader:
        item = {k: v.clone() for k, v in b.items()}
        item["sample_ids"] = b.sample_ids.clone()
        out.append(item)
    return out


def test_manifest_index_and_cli_describe_the_patches(packs):
    path = packs["patches"]
    run_docfeed("verify", path)
    manifest = json.loads((path / "docfeed.json").read_text())
    assert manifest["preprocess"] == {
        "preset": "pix2struct", "stored_form": "patches", "max_patches": MAX_PATCHES,
        "patch_height": PATCH["height"], "patch_width": PATCH["width"],
        "hf_version": HF_VERSION, "backend": "pil"}, manifest["preprocess"]
    assert manifest["codec"] == "pfm"
    assert manifest["stored_codecs"] == {"pfm": 6}, manifest["stored_codecs"]
    info = json.loads(run_docfeed("inspect", path, "--json").stdout)
    assert info["preprocess"] == manifest["preprocess"], info["preprocess"]
    text = run_docfeed("inspect", path).stdout
    assert "flattened_patches rows" in text and "float PFM" in text, text
    # The page form's record is what it was before the patches form existed.
    page = json.loads((packs["page"] / "docfeed.json").read_text())
    assert page["preprocess"] == {"preset": "pix2struct", "hf_version": HF_VERSION,
                                  "backend": "pil"}
    bench = json.loads(run_docfeed("bench", path, "--json", "--threads", "1", "--batch-size",
                                   "2", "--baseline", "6").stdout)
    assert bench["preset"] == "pix2struct" and bench["preprocessed"], bench
    assert bench["preset_options"]["max_patches"] == MAX_PATCHES, bench


def test_datasets_opens_the_processors_patch_rows(packs):
    skip_unless_exact_kernels()
    originals = datasets.load_from_disk(str(packs["originals"]))
    stored = datasets.load_from_disk(str(packs["patches"]))
    raw = stored.cast_column("image", datasets.Image(decode=False))
    proc = Processor(max_patches=MAX_PATCHES, patch_size=PATCH)
    assert len(stored) == len(originals) == 6
    for i in range(len(originals)):
        want = proc([originals[i]["image"]], return_tensors="np")
        patches = want["flattened_patches"][0]
        real = int(want["attention_mask"][0].sum())
        image = stored[i]["image"]
        assert image.mode == "F"
        got = np.asarray(image)
        assert got.dtype == np.float32 and got.shape == (real, ROW_VALUES), got.shape
        # Bit for bit, not just equal as numbers (-0.0 and 0.0 would pass ==).
        assert got.tobytes() == np.ascontiguousarray(patches[:real]).tobytes()
        assert not patches[real:].any()  # the padding rows not stored are the zero rows
        # The raw bytes are the documented PFM: "Pf", little-endian, rows bottom to top.
        b = raw[i]["image"]["bytes"]
        header = f"Pf\n{ROW_VALUES} {real}\n-1.0\n".encode()
        assert b[:len(header)] == header
        body = np.frombuffer(b[len(header):], dtype="<f4").reshape(real, ROW_VALUES)
        assert np.array_equal(body[::-1], patches[:real])
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(b))), got)


def test_loader_batches_equal_the_page_form_and_the_processor(packs):
    got = batches(make_loader(packs["patches"]))
    page = batches(make_loader(packs["page"]))
    assert [set(b) for b in got] == [set(b) for b in page]
    assert set(got[0]) == {"flattened_patches", "attention_mask", "sample_ids"}
    assert sum(len(b["sample_ids"]) for b in got) == 6
    for a, b in zip(got, page):
        for key in a:
            assert a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]), key
    assert tuple(got[0]["flattened_patches"].shape) == (4, MAX_PATCHES, ROW_VALUES)
    skip_unless_exact_kernels()
    originals = datasets.load_from_disk(str(packs["originals"]))
    proc = Processor(max_patches=MAX_PATCHES, patch_size=PATCH)
    for b in got:
        want = proc([originals[int(i)]["image"] for i in b["sample_ids"]], return_tensors="pt")
        assert torch.equal(b["flattened_patches"], want["flattened_patches"])
        assert torch.equal(b["attention_mask"], want["attention_mask"])


def test_loader_with_other_settings_is_refused(packs):
    path = packs["patches"]
    other = 9 - HF_VERSION
    for kwargs, asked in [({"max_patches": 64}, "max_patches 64"),
                          ({"patch_size": 16}, "patch size 16x16"),
                          ({"hf_version": other}, f"transformers {other}.x")]:
        with pytest.raises(docfeed.FailedPreconditionError) as e:
            make_loader(path, **kwargs)
        message = str(e.value)
        assert str(path) in message, message
        assert (f"max_patches {MAX_PATCHES}, patch size {PATCH['height']}x{PATCH['width']}, "
                f"transformers {HF_VERSION}.x") in message, message
        assert asked in message and "re-pack" in message, message
        assert "--stored-form patches --max-patches" in message, message
    for preset in ("donut", "nougat", "idefics3"):
        with pytest.raises(docfeed.FailedPreconditionError, match='"pix2struct"'):
            docfeed.Loader(path, batch_size=2, preset=preset)


def test_docfeed_dataset_loads_the_stored_settings(packs):
    """docfeed.hf.DocfeedDataset without a processor takes max_patches and the patch size from
    the manifest (the defaults, 2048 and 16 x 16, would be refused); dataset_info says them."""
    from docfeed import _docfeed
    info = _docfeed.dataset_info(str(packs["patches"]))["preprocess"]
    assert info["stored_form"] == "patches" and info["max_patches"] == MAX_PATCHES, info
    assert (info["patch_height"], info["patch_width"]) == (PATCH["height"], PATCH["width"])
    assert _docfeed.dataset_info(str(packs["page"]))["preprocess"]["stored_form"] == "page"
    dataset = docfeed.hf.DocfeedDataset(str(packs["patches"]), preset="pix2struct")
    loader = dataset.loader(batch_size=2, shuffle=False, drop_last=False)
    want = batches(make_loader(packs["patches"], batch_size=2, shuffle=False))
    got = batches(loader)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        for key in ("flattened_patches", "attention_mask", "sample_ids"):
            assert torch.equal(a[key], b[key]), key


def test_pack_options_are_checked(packs, tmp_path):
    source = packs["patches"].parent / "src"
    for args, message in [
            (["--preprocess", "pix2struct", "--stored-form", "tiles"], "page or patches"),
            (["--preprocess", "pix2struct", "--max-patches", "64"], "need --stored-form patches"),
            (["--preprocess", "donut", "--size", "64x64", "--stored-form", "patches"],
             "pix2struct preset's"),
            (["--stored-form", "patches"], "need --preprocess"),
            (["--preprocess", "pix2struct", "--stored-form", "patches", "--max-patches", "0"],
             "--max-patches")]:
        result = run_docfeed("pack", source, "-o", tmp_path / "bad", *args, check=False)
        assert result.returncode != 0, args
        assert message in result.stderr, (args, result.stderr)


def test_docfeed_dataset_on_the_page_form(packs):
    """DocfeedDataset(preset="pix2struct") on a page-form dataset with no processor takes the
    loader's settings (given, else the preset's 2048 and 16 x 16). The page form records no page
    size (height and width are 0), which DocfeedDataset once read as the nougat image_size: the
    loader was then refused with "height must be an integer in 1..65535, not 0"."""
    for options, want_args in [({}, {"max_patches": 2048, "patch_size": 16}),
                               ({"max_patches": MAX_PATCHES, "patch_size": PATCH}, {})]:
        dataset = docfeed.hf.DocfeedDataset(str(packs["page"]), preset="pix2struct", **options)
        got = batches(dataset.loader(batch_size=2, shuffle=False, drop_last=False))
        want = batches(make_loader(packs["page"], batch_size=2, shuffle=False, **want_args))
        assert len(got) == len(want) == 3
        for a, b in zip(got, want):
            for key in ("flattened_patches", "attention_mask", "sample_ids"):
                assert torch.equal(a[key], b[key]), key


def stored_bytes(path):
    rows = datasets.load_from_disk(str(path)).cast_column("image", datasets.Image(decode=False))
    return [r["bytes"] for r in rows["image"]]


def test_python_pack_stores_the_patches(packs, tmp_path):
    """docfeed.pack(..., preprocess="pix2struct", stored_form="patches", max_patches=,
    patch_size=) from a path (pack_path) and from a datasets.Dataset (pack_rows) stores what the
    CLI stores, and its batches are the processor's for the original pages."""
    source = packs["patches"].parent / "src"
    originals = datasets.load_from_disk(str(packs["originals"]))
    from_path = docfeed.pack(source, tmp_path / "from-path", preprocess="pix2struct",
                             stored_form="patches", max_patches=MAX_PATCHES,
                             patch_size=(PATCH["height"], PATCH["width"]), hf_version=HF_VERSION)
    from_rows = docfeed.pack(originals, tmp_path / "from-rows", preprocess="pix2struct",
                             stored_form="patches", max_patches=MAX_PATCHES, patch_size=PATCH,
                             hf_version=HF_VERSION)
    cli = stored_bytes(packs["patches"])
    for out in (from_path, from_rows):
        manifest = json.loads((tmp_path / out / "docfeed.json").read_text())
        assert manifest["preprocess"] == {
            "preset": "pix2struct", "stored_form": "patches", "max_patches": MAX_PATCHES,
            "patch_height": PATCH["height"], "patch_width": PATCH["width"],
            "hf_version": HF_VERSION, "backend": "pil"}, manifest["preprocess"]
        assert stored_bytes(out) == cli
    # A square patch_size given as an int: 16 x 16 rows.
    square = docfeed.pack(source, tmp_path / "square", preprocess="pix2struct",
                          stored_form="patches", max_patches=64, patch_size=16)
    assert np.asarray(datasets.load_from_disk(square)[0]["image"]).shape[1] == 2 + 3 * 16 * 16
    skip_unless_exact_kernels()
    proc = Processor(max_patches=MAX_PATCHES, patch_size=PATCH)
    for out in (from_path, from_rows):
        got = batches(make_loader(out))
        assert sum(len(b["sample_ids"]) for b in got) == 6
        for b in got:
            want = proc([originals[int(i)]["image"] for i in b["sample_ids"]],
                        return_tensors="pt")
            assert torch.equal(b["flattened_patches"], want["flattened_patches"])
            assert torch.equal(b["attention_mask"], want["attention_mask"])


def test_python_pack_options_are_checked(packs, tmp_path):
    source = packs["patches"].parent / "src"
    for kwargs, message in [
            ({"preprocess": "pix2struct", "stored_form": "tiles"},
             'stored_form must be "page" or "patches"'),
            ({"preprocess": "pix2struct", "max_patches": 64}, 'need stored_form="patches"'),
            ({"preprocess": "pix2struct", "stored_form": "page", "patch_size": 8},
             'need stored_form="patches"'),
            ({"preprocess": "donut", "size": (64, 64), "stored_form": "patches"},
             "stored_form and max_patches are the pix2struct preset's, not donut's"),
            ({"preprocess": "idefics3", "max_patches": 64},
             "stored_form and max_patches are the pix2struct preset's, not idefics3's"),
            ({"stored_form": "patches"}, "need preprocess="),
            ({"preprocess": "pix2struct", "stored_form": "patches", "max_patches": 0},
             "max_patches"),
            ({"preprocess": "pix2struct", "stored_form": "patches", "patch_size": (16, 300)},
             "patch_size width"),
            ({"preprocess": "pix2struct", "stored_form": "patches", "patch_size": {"h": 4}},
             "patch_size must be an int, (height, width)")]:
        with pytest.raises(docfeed.InvalidArgumentError) as e:
            docfeed.pack(source, tmp_path / "bad", **kwargs)
        assert message in str(e.value), (kwargs, str(e.value))
        assert not (tmp_path / "bad").exists(), kwargs

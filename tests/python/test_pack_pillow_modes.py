"""`docfeed pack` on the inputs Pillow opens in modes docfeed converts (CMYK JPEG, 16-bit gray
PNG, animated GIF/WebP/APNG) and on a JPEG that decodes only with warnings (a bad Huffman code),
with Pillow 13 as the reference for every stored pixel (src/pack/README.md, "Decode warnings" and
"Inputs Pillow converts")."""
import io
import json
import shutil

import datasets
import numpy as np
from PIL import Image

from conftest import REPO, run_docfeed

MODES = REPO / "tests" / "data" / "images" / "modes"
FILES = ["cmyk_adobe.jpg", "ycck.jpg", "gray16_mixed.png", "anim_trns.gif", "anim_lossy.webp",
         "anim_default_image.png", "warn_huffman.jpg"]


def image_folder(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "metadata.jsonl", "w", encoding="utf-8") as meta:
        for i, name in enumerate(FILES):
            shutil.copy(MODES / name, src / name)
            meta.write(json.dumps({"file_name": name, "n": i}) + "\n")
    return src


def pillow_pixels(data):
    """What a Donut pipeline gets from Pillow: frame 0, convert("RGB") (alpha dropped)."""
    with Image.open(io.BytesIO(data)) as img:
        return np.asarray(img.convert("RGB"))


def test_pack_stores_pillows_pixels_and_reports_the_warning(tmp_path):
    src = image_folder(tmp_path)
    proc = run_docfeed("pack", src, "-o", tmp_path / "out")
    assert "packed 7 samples" in proc.stdout, proc.stdout
    assert "warnings   1 image(s) decoded only with warnings" in proc.stdout, proc.stdout
    assert "warned     warn_huffman.jpg: " in proc.stdout, proc.stdout
    assert "Corrupt JPEG data" in proc.stdout, proc.stdout
    ds = datasets.load_from_disk(str(tmp_path / "out"))
    ds = ds.cast_column("image", datasets.Image(decode=False))
    rows = list(ds)
    assert [r["n"] for r in rows] == list(range(len(FILES)))
    for name, row in zip(FILES, rows):
        stored = row["image"]["bytes"]
        np.testing.assert_array_equal(pillow_pixels(stored),
                                      pillow_pixels((src / name).read_bytes()), err_msg=name)
    # The GIF is stored as a PNG of frame 0 (shards hold no GIF); the rest as they are.
    gif = rows[FILES.index("anim_trns.gif")]["image"]["bytes"]
    assert gif.startswith(b"\x89PNG")
    with Image.open(io.BytesIO(gif)) as stored, Image.open(src / "anim_trns.gif") as source:
        np.testing.assert_array_equal(np.asarray(stored), np.asarray(source.convert("RGBA")))
    assert rows[FILES.index("ycck.jpg")]["image"]["bytes"] == (src / "ycck.jpg").read_bytes()
    run_docfeed("verify", tmp_path / "out")


def test_strict_refuses_the_jpeg_with_warnings(tmp_path):
    src = image_folder(tmp_path)
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", "--strict", check=False)
    assert proc.returncode == 1
    assert "warn_huffman.jpg" in proc.stderr and "refused by strict" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()

    proc = run_docfeed("pack", src, "-o", tmp_path / "out", "--strict", "--skip-bad")
    assert "rejected   1 sample" in proc.stdout, proc.stdout
    assert "warned" not in proc.stdout
    rejects = [json.loads(line) for line in open(tmp_path / "out" / "rejects.jsonl")]
    assert [r["file_name"] for r in rejects] == ["warn_huffman.jpg"]
    assert "Corrupt JPEG data" in rejects[0]["error"], rejects[0]
    assert "refused by strict" in rejects[0]["error"], rejects[0]
    assert len(datasets.load_from_disk(str(tmp_path / "out"))) == len(FILES) - 1


def test_a_truncated_jpeg_is_refused_as_pillow_refuses_it(tmp_path):
    src = image_folder(tmp_path)
    shutil.copy(MODES / "truncated.jpg", src / "cmyk_adobe.jpg")  # Pillow: "image file is truncated"
    proc = run_docfeed("pack", src, "-o", tmp_path / "out", check=False)
    assert proc.returncode == 1
    assert "cmyk_adobe.jpg" in proc.stderr and "truncated" in proc.stderr, proc.stderr


def test_validate_auto_checks_a_datasets_structure_and_decodes_files(tmp_path):
    """`--validate auto` (the default): the images of a save_to_disk dataset get the structure
    check, so the JPEG with a bad Huffman code, whose scan only a decode reads, packs without a
    warning; the same JPEG in an image folder is decoded and reported; on the dataset,
    `--validate full` reports it and `--strict` (which needs a decode) refuses it. A truncated
    JPEG in the dataset is refused under auto, naming its row, as under full."""
    features = datasets.Features({"image": datasets.Image(), "n": datasets.Value("int64")})
    names = ["cmyk_adobe.jpg", "gray16_mixed.png", "warn_huffman.jpg"]
    rows = {"image": [{"bytes": (MODES / n).read_bytes(), "path": n} for n in names],
            "n": list(range(len(names)))}
    datasets.Dataset.from_dict(rows, features=features).save_to_disk(str(tmp_path / "saved"))

    auto = run_docfeed("pack", tmp_path / "saved", "-o", tmp_path / "auto")
    assert "packed 3 samples" in auto.stdout, auto.stdout
    assert "warn" not in auto.stdout, auto.stdout
    full = run_docfeed("pack", tmp_path / "saved", "-o", tmp_path / "full", "--validate", "full")
    assert "warnings   1 image(s) decoded only with warnings" in full.stdout, full.stdout
    strict = run_docfeed("pack", tmp_path / "saved", "-o", tmp_path / "strict", "--strict",
                         check=False)
    assert strict.returncode == 1 and "refused by strict" in strict.stderr, strict.stderr
    # The stored rows are the same either way (only the check differs).
    for out in ("auto", "full"):
        ds = datasets.load_from_disk(str(tmp_path / out))
        ds = ds.cast_column("image", datasets.Image(decode=False))
        assert [r["image"]["bytes"] for r in ds] == [(MODES / n).read_bytes() for n in names]
    folder = run_docfeed("pack", image_folder(tmp_path), "-o", tmp_path / "folder")
    assert "warned     warn_huffman.jpg: " in folder.stdout, folder.stdout

    rows["image"][0] = {"bytes": (MODES / "truncated.jpg").read_bytes(), "path": "t.jpg"}
    datasets.Dataset.from_dict(rows, features=features).save_to_disk(str(tmp_path / "cut"))
    cut = run_docfeed("pack", tmp_path / "cut", "-o", tmp_path / "cut_out", check=False)
    assert cut.returncode == 1 and "truncated" in cut.stderr, cut.stderr
    assert "row 0" in cut.stderr or "t.jpg" in cut.stderr, cut.stderr
    assert not (tmp_path / "cut_out").exists()

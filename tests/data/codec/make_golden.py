#!/usr/bin/env python3
"""Builds docfeed's codec test corpus and its Pillow golden file.

Run from the repository root with the project's virtual environment:

    .venv/bin/python tests/data/codec/make_golden.py

It does two things:

1. Writes the small *generated* test images under tests/data/images/gen/ (progressive JPEG,
   EXIF-rotated JPEG/PNG, CMYK JPEG, 12-bit JPEG header, 1/2/4/16-bit PNGs, an Adam7-interlaced
   PNG, palette PNG with tRNS, WebP lossy/lossless/alpha, GIF/BMP/TIFF). All are made by Pillow
   (or, where Pillow cannot write the variant, by the tiny PNG writer below), never by docfeed.
   make_mode_images.py adds tests/data/images/modes/ (CMYK/YCCK JPEG, 16-bit gray PNG, GIF,
   animated WebP/APNG/GIF, JPEGs that decode with warnings, a truncated JPEG).
2. Decodes every test image with Pillow, the reference, and writes tests/data/codec/golden.json:
   Pillow's mode and size, the EXIF orientation `ImageOps.exif_transpose` would apply, and the
   XXH3-64 of `np.asarray(img).tobytes()` for the 8-bit mode docfeed must produce. It also writes
   Pillow's `exif_transpose` output for all 8 orientations of a small generated image.

The generated files are deterministic for a given Pillow/libwebp/libjpeg version; golden.json
is always recomputed from the bytes on disk, so re-running never breaks the pairing.
"""

import io
import json
import pathlib
import struct
import zlib

import numpy as np
import PIL
import xxhash
from PIL import Image, ImageOps

import make_mode_images

ROOT = pathlib.Path(__file__).resolve().parents[3]
IMAGES = ROOT / "tests/data/images"
GEN = IMAGES / "gen"
GOLDEN = ROOT / "tests/data/codec/golden.json"


def png_bytes(width, height, bit_depth, color_type, rows, extra_chunks=(), interlace=0):
    """A minimal PNG writer (filter type 0) for variants Pillow cannot write.

    `rows` is a list of already-packed scanlines (bytes). With interlace=1 the caller passes the
    seven Adam7 pass images' rows concatenated (see adam7_rows)."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, interlace)
    raw = b"".join(b"\0" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
    for kind, data in extra_chunks:
        out += chunk(kind, data)
    return out + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def adam7_rows(pixels):
    """Splits an HxWxC uint8 array into Adam7 pass scanlines (PNG spec section 8.2)."""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
              (0, 1, 1, 2)]
    rows = []
    for x0, y0, dx, dy in passes:
        sub = pixels[y0::dy, x0::dx]
        if sub.shape[0] == 0 or sub.shape[1] == 0:
            continue
        rows.extend(sub[y].tobytes() for y in range(sub.shape[0]))
    return rows


def pack_bits(gray, bits):
    """Packs an HxW array of values < 2**bits into PNG scanlines, most significant bits first."""
    rows = []
    per_byte = 8 // bits
    for row in gray:
        padded = list(row) + [0] * (-len(row) % per_byte)
        out = bytearray()
        for i in range(0, len(padded), per_byte):
            v = 0
            for p in padded[i:i + per_byte]:
                v = (v << bits) | int(p)
            out.append(v)
        rows.append(bytes(out))
    return rows


def exif_with_orientation(value):
    exif = Image.Exif()
    exif[0x0112] = value
    return exif.tobytes()


def make_generated():
    GEN.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20240601)
    receipt = Image.open(IMAGES / "sroie_000.jpg").convert("RGB")
    crop = receipt.crop((40, 120, 40 + 161, 120 + 203))  # odd size on purpose
    # FlipkartInvoice.png is RGBA but fully opaque; give a crop a real alpha ramp (with RGB kept
    # under alpha 0) so the WebP alpha paths are exercised.
    flip = np.array(Image.open(IMAGES / "FlipkartInvoice.png").crop((300, 200, 397, 261)))
    flip[..., 3] = (np.arange(97)[None, :] * 255 // 96).astype(np.uint8)
    flip = Image.fromarray(flip, "RGBA")

    crop.save(GEN / "progressive.jpg", quality=90, progressive=True)
    crop.convert("L").save(GEN / "progressive_gray.jpg", quality=85, progressive=True)
    crop.resize((40, 50)).save(GEN / "orientation6.jpg", quality=90,
                               exif=exif_with_orientation(6))
    crop.resize((30, 20)).save(GEN / "jpeg_named.png", format="JPEG", quality=80)
    crop.resize((24, 24)).convert("CMYK").save(GEN / "cmyk.jpg", quality=90)
    crop.resize((24, 24)).save(GEN / "subsampling444.jpg", quality=95, subsampling=0)
    crop.resize((31, 17)).save(GEN / "subsampling422.jpg", quality=95, subsampling=1)
    # A 12-bit JPEG: Pillow cannot write one, so patch the SOF0 precision byte of a small file.
    # The header is what the decoder must refuse; the entropy data does not matter.
    small = io.BytesIO()
    crop.resize((16, 16)).convert("L").save(small, format="JPEG", quality=90)
    data = bytearray(small.getvalue())
    sof = data.find(b"\xff\xc0")
    data[sof + 1] = 0xC1  # SOF1 (extended sequential) allows 12-bit precision.
    data[sof + 4] = 12
    (GEN / "precision12.jpg").write_bytes(bytes(data))

    crop.resize((33, 21)).save(GEN / "orientation3.png", exif=exif_with_orientation(3))
    crop.convert("LA").resize((29, 13)).save(GEN / "la8.png")
    pal = crop.resize((45, 23)).quantize(colors=16)
    trns = bytes(range(0, 256, 16))
    pal.save(GEN / "palette_trns.png", transparency=trns)
    pal.save(GEN / "palette4.png", bits=4)

    for bits in (1, 2, 4):
        gray = rng.integers(0, 2**bits, (9, 13))
        (GEN / f"gray{bits}.png").write_bytes(png_bytes(13, 9, bits, 0, pack_bits(gray, bits)))
    for color_type, channels, name in ((0, 1, "gray16"), (4, 2, "la16"), (2, 3, "rgb16"),
                                       (6, 4, "rgba16")):
        px = rng.integers(0, 65536, (7, 11, channels), dtype=np.uint16)
        rows = [px[y].astype(">u2").tobytes() for y in range(7)]
        (GEN / f"{name}.png").write_bytes(png_bytes(11, 7, 16, color_type, rows))
    rgb = np.asarray(crop.resize((37, 29)))
    (GEN / "interlaced.png").write_bytes(png_bytes(37, 29, 8, 2, adam7_rows(rgb), interlace=1))
    gray_trns = rng.integers(0, 256, (5, 6), dtype=np.uint8)
    (GEN / "gray_trns.png").write_bytes(
        png_bytes(6, 5, 8, 0, [r.tobytes() for r in gray_trns],
                  extra_chunks=[(b"tRNS", struct.pack(">H", int(gray_trns[0, 0])))]))

    crop.save(GEN / "lossy.webp", quality=80)
    flip.save(GEN / "lossless_rgba.webp", lossless=True, exact=True)
    flip.save(GEN / "lossy_alpha.webp", quality=70)
    crop.resize((20, 30)).save(GEN / "orientation8.webp", lossless=True,
                               exif=exif_with_orientation(8))

    crop.resize((8, 8)).save(GEN / "tiny.gif")
    crop.resize((8, 8)).save(GEN / "tiny.bmp")
    crop.resize((8, 8)).save(GEN / "tiny.tif")


def reference_pixels(img):
    """What docfeed's DecodeImage must return: Pillow's 8-bit natural mode.

    Palette images go through the palette (RGBA when a tRNS chunk or a GIF transparent index is
    present), mode "1" widens to "L" (0/255), CMYK is convert("RGB"), 16-bit gray (I;16) is
    convert("L") (which clips at 255); every other 8-bit mode is taken as Pillow decodes it."""
    if img.mode == "P":
        img = img.convert("RGBA" if "transparency" in img.info else "RGB")
    elif img.mode in ("1", "I;16"):
        img = img.convert("L")
    elif img.mode == "CMYK":
        img = img.convert("RGB")
    return img


def golden_entry(path):
    rel = path.relative_to(IMAGES).as_posix()
    try:
        img = Image.open(path)
    except OSError as e:  # e.g. 12-bit JPEG: Pillow refuses it too.
        return {"file": rel, "decodable": False, "pillow_error": str(e).replace(str(path), rel)}
    with img:
        entry = {"file": rel, "format": img.format, "mode": img.mode, "width": img.width,
                 "height": img.height}
        orientation = img.getexif().get(0x0112, 1)
        entry["frames"] = getattr(img, "n_frames", 1)
        try:
            img.load()
        except OSError as e:  # e.g. "image file is truncated": docfeed must refuse it too.
            entry.update({"decodable": False, "pillow_error": str(e)})
            return entry
        entry["exif_orientation"] = orientation if orientation in range(1, 9) else 1
        if img.format not in ("JPEG", "PNG", "WEBP", "GIF", "TIFF"):
            entry["decodable"] = False
            return entry
        ref = reference_pixels(img)
        arr = np.ascontiguousarray(np.asarray(ref, dtype=np.uint8))
        entry.update({"decodable": True, "decoded_mode": ref.mode,
                      "channels": 1 if arr.ndim == 2 else arr.shape[2],
                      "xxh3": f"{xxhash.xxh3_64_intdigest(arr.tobytes()):016x}"})
    return entry


def orientation_cases():
    """Pillow's exif_transpose of a 5x3 RGB image for orientations 1..8."""
    base = np.arange(5 * 3 * 3, dtype=np.uint8).reshape(3, 5, 3) * 5
    cases = []
    for orientation in range(1, 9):
        img = Image.fromarray(base, "RGB")
        exif = img.getexif()
        exif[0x0112] = orientation
        buf = io.BytesIO()
        img.save(buf, format="PNG", exif=exif.tobytes())
        with Image.open(io.BytesIO(buf.getvalue())) as reopened:
            out = ImageOps.exif_transpose(reopened)
            arr = np.asarray(out)
        cases.append({"orientation": orientation, "width": out.width, "height": out.height,
                      "pixels": arr.reshape(-1).tolist()})
    return {"width": 5, "height": 3, "channels": 3, "pixels": base.reshape(-1).tolist(),
            "cases": cases}


def main():
    make_generated()
    make_mode_images.make()
    files = sorted(p for p in IMAGES.rglob("*") if p.is_file() and p.suffix != ".md")
    golden = {"pillow": PIL.__version__, "images": [golden_entry(p) for p in files],
              "orientation": orientation_cases()}
    GOLDEN.write_text(json.dumps(golden, indent=1) + "\n")
    for e in golden["images"]:
        print(e["file"], e.get("format"), e.get("mode"), e.get("width"), e.get("height"),
              e.get("decoded_mode"), e.get("exif_orientation"))


if __name__ == "__main__":
    main()

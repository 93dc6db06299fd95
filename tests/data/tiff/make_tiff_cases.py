#!/usr/bin/env python3
"""Builds docfeed's TIFF test corpus and its Pillow reference file.

Run from the repository root with the project's virtual environment (Pillow, numpy, xxhash) and
libtiff's tools (Debian libtiff-tools: tiffcp) on PATH:

    .venv/bin/python tests/data/tiff/make_tiff_cases.py

It does two things:

1. Writes small TIFF files under tests/data/tiff/cases/: every compression Pillow reads, strips
   and tiles, contiguous and separate planes, 1/2/4/8/16-bit samples, gray (min-is-black and
   min-is-white), gray+alpha, RGB(A) with every ExtraSamples kind, palette, CMYK, YCbCr (JPEG and
   uncompressed), BigTIFF, both byte orders, several pages, Orientation 1..8, layouts Pillow
   refuses, and two real document pages (tests/data/images/azure_invoice_sample.jpg as CCITT G4
   bilevel, a crop of sroie_000.jpg as LZW gray). They are made by Pillow's TIFF writer, by
   libtiff's tiffcp (compression, tiles, planes, BigTIFF, byte order, fill order), and, for
   layouts neither writes, by the minimal uncompressed TIFF writer below. Never by docfeed.
2. Opens every file with Pillow, the reference, and writes tests/data/tiff/expected.json: per
   page, Pillow's mode, the stored size, the Orientation tag Pillow applies, and the XXH3-64 of
   the 8-bit pixels docfeed must produce after ApplyOrientation: `np.asarray` of Pillow's loaded
   page (Pillow's TIFF loader applies the Orientation tag itself), with modes "1", "I;16" and
   "I;16B" converted to "L", "P" to "RGB", "PA" to "RGBA" and "CMYK" to "RGB". Files Pillow
   cannot open or load get its error message instead.

The files depend on the Pillow and libtiff versions that wrote them; expected.json is always
recomputed from the bytes on disk, so re-running never breaks the pairing.
"""

import json
import pathlib
import shutil
import struct
import subprocess
import zlib

import numpy as np
import PIL
import xxhash
from PIL import Image, features

ROOT = pathlib.Path(__file__).resolve().parents[3]
IMAGES = ROOT / "tests/data/images"
HERE = ROOT / "tests/data/tiff"
CASES = HERE / "cases"
EXPECTED = HERE / "expected.json"

SHORT, LONG = 3, 4


def pack_rows(samples, bits, big_endian):
    """Packs an HxWxS (or HxW) integer array into uncompressed TIFF rows (bytes per row padded
    to a byte, sub-byte samples most significant bits first)."""
    arr = np.asarray(samples)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    rows = []
    for row in arr.reshape(arr.shape[0], -1):
        if bits == 16:
            rows.append(row.astype(">u2" if big_endian else "<u2").tobytes())
        elif bits == 8:
            rows.append(row.astype(np.uint8).tobytes())
        else:
            per_byte = 8 // bits
            padded = list(row) + [0] * (-len(row) % per_byte)
            out = bytearray()
            for i in range(0, len(padded), per_byte):
                v = 0
                for p in padded[i:i + per_byte]:
                    v = (v << bits) | int(p)
                out.append(v)
            rows.append(bytes(out))
    return b"".join(rows)


def tiff_bytes(width, height, photometric, bits, planes, *, extras=(), colormap=None,
               big_endian=False, orientation=None, sample_format=None, planar=1,
               ycbcr_subsampling=None, samples=None, deflate=False):
    """A minimal TIFF (TIFF 6.0 section 2): header, strip data, then one IFD. Uncompressed, or
    with `deflate` each strip zlib-compressed (Adobe Deflate, compression 8).

    `planes` is a list of byte strings: one strip holding every sample (planar=1) or one strip
    per sample (planar=2)."""
    bo = ">" if big_endian else "<"
    samples = samples or (len(planes) if planar == 2 else None)
    if deflate:
        planes = [zlib.compress(p, 9) for p in planes]
    data = b"".join(planes)
    offsets, counts, pos = [], [], 8
    for p in planes:
        offsets.append(pos)
        counts.append(len(p))
        pos += len(p)
    entries = {256: (LONG, [width]), 257: (LONG, [height]), 258: (SHORT, [bits] * samples),
               259: (SHORT, [8 if deflate else 1]), 262: (SHORT, [photometric]), 273: (LONG, offsets),
               277: (SHORT, [samples]), 278: (LONG, [height]), 279: (LONG, counts),
               284: (SHORT, [planar])}
    if orientation is not None:
        entries[274] = (SHORT, [orientation])
    if colormap is not None:
        entries[320] = (SHORT, list(colormap))
    if extras:
        entries[338] = (SHORT, list(extras))
    if sample_format is not None:
        entries[339] = (SHORT, [sample_format] * samples)
    if ycbcr_subsampling is not None:
        entries[530] = (SHORT, list(ycbcr_subsampling))
    ifd_offset = 8 + len(data) + (len(data) & 1)
    extra_offset = ifd_offset + 2 + 12 * len(entries) + 4
    ifd, extra = b"", b""
    for tag in sorted(entries):
        kind, values = entries[tag]
        fmt = "H" if kind == SHORT else "I"
        payload = struct.pack(bo + fmt * len(values), *values)
        if len(payload) <= 4:
            field = payload.ljust(4, b"\0")
        else:
            field = struct.pack(bo + "I", extra_offset + len(extra))
            extra += payload + b"\0" * (len(payload) & 1)
        ifd += struct.pack(bo + "HHI", tag, kind, len(values)) + field
    header = (b"MM\0*" if big_endian else b"II*\0") + struct.pack(bo + "I", ifd_offset)
    body = data + b"\0" * (len(data) & 1)
    return (header + body + struct.pack(bo + "H", len(entries)) + ifd + struct.pack(bo + "I", 0)
            + extra)


def write_raw(name, pixels, photometric, bits, **kw):
    """Writes `pixels` (HxW or HxWxS integers) as an uncompressed TIFF (contiguous planes)."""
    arr = np.asarray(pixels)
    samples = 1 if arr.ndim == 2 else arr.shape[2]
    data = pack_rows(arr, bits, kw.get("big_endian", False))
    (CASES / name).write_bytes(
        tiff_bytes(arr.shape[1], arr.shape[0], photometric, bits, [data], samples=samples, **kw))


def tiffcp(source, name, *args):
    subprocess.run(["tiffcp", *args, str(CASES / source), str(CASES / name)], check=True)


def ycbcr_units(rgb, h, v):
    """RGB (HxWx3, sides multiples of h and v) as TIFF YCbCr data units (TIFF 6.0 section 21):
    per h x v block the Y samples row by row, then Cb and Cr averaged over the block (CCIR 601
    coefficients, ReferenceBlackWhite defaults 0/255/128/255/128/255)."""
    f = rgb.astype(np.float64)
    y = 0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]
    cb = (f[..., 2] - y) / 1.772 + 128
    cr = (f[..., 0] - y) / 1.402 + 128
    out = bytearray()
    for by in range(0, rgb.shape[0], v):
        for bx in range(0, rgb.shape[1], h):
            block = (slice(by, by + v), slice(bx, bx + h))
            out += np.clip(np.rint(y[block]), 0, 255).astype(np.uint8).tobytes()
            out.append(int(np.clip(np.rint(cb[block].mean()), 0, 255)))
            out.append(int(np.clip(np.rint(cr[block].mean()), 0, 255)))
    return bytes(out)


def base_images():
    receipt = Image.open(IMAGES / "sroie_000.jpg").convert("RGB")
    rgb = receipt.crop((40, 120, 40 + 148, 120 + 116)).resize((37, 29))  # odd size on purpose
    rng = np.random.default_rng(20261202)
    alpha = (np.arange(37)[None, :] * 255 // 36).repeat(29, 0).astype(np.uint8)
    return rgb, rng, alpha


def make_pillow_cases(rgb, alpha):
    gray = rgb.convert("L")
    bilevel = gray.point(lambda v: 255 if v > 140 else 0).convert("1", dither=Image.Dither.NONE)
    for compression in ("raw", "tiff_lzw", "tiff_adobe_deflate", "packbits", "jpeg", "lzma",
                        "zstd"):
        rgb.save(CASES / f"rgb_{compression}.tif", compression=compression)
    gray.save(CASES / "gray_lzw.tif", compression="tiff_lzw")
    gray.save(CASES / "gray_jpeg.tif", compression="jpeg")
    for compression in ("raw", "group3", "group4", "tiff_ccitt", "packbits", "tiff_lzw"):
        bilevel.save(CASES / f"bilevel_{compression}.tif", compression=compression)
    rgb.quantize(colors=16).save(CASES / "palette8_lzw.tif", compression="tiff_lzw")
    rgba = rgb.copy()
    rgba.putalpha(Image.fromarray(alpha))
    rgba.save(CASES / "rgba_deflate.tif", compression="tiff_adobe_deflate")
    la = gray.copy()
    la.putalpha(Image.fromarray(alpha))
    la.save(CASES / "la_raw.tif")
    rgb.convert("CMYK").save(CASES / "cmyk_lzw.tif", compression="tiff_lzw")
    # Three pages of different modes and sizes.
    rgb.save(CASES / "multipage_lzw.tif", compression="tiff_lzw", save_all=True,
             append_images=[gray, rgb.rotate(90, expand=True)])


def make_tiffcp_cases():
    for args, name in (
        (["-t", "-w", "16", "-l", "16", "-c", "lzw"], "rgb_tiled_lzw.tif"),
        (["-t", "-w", "16", "-l", "16", "-c", "jpeg"], "rgb_tiled_jpeg_ycbcr.tif"),
        (["-r", "16", "-c", "jpeg"], "rgb_jpeg_ycbcr.tif"),
        (["-c", "jpeg:r"], "rgb_jpeg_rgb.tif"),
        (["-p", "separate", "-c", "lzw"], "rgb_planar_lzw.tif"),
        (["-p", "separate", "-t", "-w", "16", "-l", "16", "-c", "zip"], "rgb_planar_tiled_zip.tif"),
        (["-8", "-c", "lzw"], "rgb_bigtiff_lzw.tif"),
        # Pillow 13 misreads big-endian BigTIFF ("Missing dimensions"); docfeed decodes it, and
        # the test compares it with Pillow's pixels of rgb_raw.tif (LOSSLESS_COPIES).
        (["-8", "-B", "-t", "-w", "16", "-l", "16", "-c", "zip"], "rgb_bigtiff_be_tiled.tif"),
        (["-B", "-c", "lzw:2"], "rgb_be_lzw_predictor.tif"),
        (["-c", "zip:2"], "rgb_zip_predictor.tif"),
        (["-r", "3", "-c", "packbits"], "rgb_rows3_packbits.tif"),
        (["-c", "lzma"], "rgb_tiffcp_lzma.tif"),
        (["-c", "zstd"], "rgb_tiffcp_zstd.tif"),
        (["-c", "webp"], "rgb_webp.tif"),  # Pillow's libtiff has no WebP: refused by both
        (["-c", "lerc"], "rgb_lerc.tif"),  # not in Pillow's compression table: refused by both
    ):
        tiffcp("rgb_raw.tif", name, *args)
    tiffcp("rgba_deflate.tif", "rgba_planar_lzw.tif", "-p", "separate", "-c", "lzw")
    tiffcp("rgba_deflate.tif", "rgba_tiled_raw.tif", "-t", "-w", "16", "-l", "16", "-c", "none")
    tiffcp("gray_lzw.tif", "gray_tiled_zip.tif", "-t", "-w", "16", "-l", "16", "-c", "zip")
    tiffcp("gray_lzw.tif", "gray_be_raw.tif", "-B", "-c", "none")
    tiffcp("bilevel_raw.tif", "bilevel_g4_lsb2msb.tif", "-f", "lsb2msb", "-c", "g4")
    tiffcp("bilevel_raw.tif", "bilevel_g3_2d.tif", "-c", "g3:2d")
    tiffcp("bilevel_raw.tif", "bilevel_g4_rows5.tif", "-r", "5", "-c", "g4")
    tiffcp("bilevel_raw.tif", "bilevel_g4_tiled.tif", "-t", "-w", "16", "-l", "16", "-c", "g4")
    tiffcp("cmyk_lzw.tif", "cmyk_planar_zip.tif", "-p", "separate", "-c", "zip")
    tiffcp("palette8_lzw.tif", "palette8_tiled_be.tif", "-B", "-t", "-w", "16", "-l", "16")
    subprocess.run(["tiffcp", "-c", "lzw", str(CASES / "bilevel_group4.tif"),
                    str(CASES / "gray_lzw.tif"), str(CASES / "rgb_jpeg_ycbcr.tif"),
                    str(CASES / "multipage_tiffcp.tif")], check=True)


def make_raw_cases(rgb, rng, alpha):
    arr = np.asarray(rgb)
    gray = np.asarray(rgb.convert("L"))
    h, w = gray.shape
    for bits in (2, 4):
        v = rng.integers(0, 2**bits, (h, w))
        write_raw(f"gray{bits}_minisblack.tif", v, 1, bits)
        write_raw(f"gray{bits}_miniswhite.tif", v, 0, bits)
    write_raw("gray8_miniswhite.tif", gray, 0, 8)
    write_raw("gray8_signed.tif", gray, 1, 8, sample_format=2)
    write_raw("bilevel_miniswhite.tif", (gray > 140).astype(int), 0, 1)
    g16 = rng.integers(0, 700, (h, w))  # both sides of Pillow's clip at 255
    write_raw("gray16_le.tif", g16, 1, 16)
    write_raw("gray16_be.tif", g16, 1, 16, big_endian=True)
    write_raw("gray16_le_miniswhite.tif", g16, 0, 16)
    write_raw("gray16_be_miniswhite.tif", g16, 0, 16, big_endian=True)  # Pillow refuses it
    c16 = rng.integers(0, 65536, (h, w, 4))
    write_raw("rgb16_le.tif", c16[..., :3], 2, 16)
    write_raw("rgb16_be.tif", c16[..., :3], 2, 16, big_endian=True)
    premultiplied = (c16[..., :3] * (c16[..., 3:] // 256) // 255).astype(np.int64)
    write_raw("rgba16_assoc.tif", np.concatenate([premultiplied, c16[..., 3:]], 2), 2, 16,
              extras=(1,))
    write_raw("rgba16_unassoc_be.tif", c16, 2, 16, extras=(2,), big_endian=True)
    write_raw("rgbx16.tif", c16, 2, 16, extras=(0,))
    a = alpha[..., None].astype(np.int64)
    write_raw("rgba_assoc.tif", np.concatenate([arr * a // 255, a], 2), 2, 8, extras=(1,))
    write_raw("rgba_noextras.tif", np.concatenate([arr, a], 2), 2, 8)
    write_raw("rgba_corel999.tif", np.concatenate([arr, a], 2), 2, 8, extras=(999,))
    write_raw("rgbx.tif", np.concatenate([arr, a], 2), 2, 8, extras=(0,))
    write_raw("rgbxx.tif", np.concatenate([arr, a, a], 2), 2, 8, extras=(0, 0))
    write_raw("rgbax.tif", np.concatenate([arr, a, a], 2), 2, 8, extras=(2, 0))
    write_raw("rgbaxx_assoc.tif", np.concatenate([arr * a // 255, a, a, a], 2), 2, 8,
              extras=(1, 0, 0))
    write_raw("cmykx.tif", np.concatenate([np.asarray(rgb.convert("CMYK")), a], 2), 5, 8,
              extras=(0,))
    write_raw("cmyk16.tif", c16, 5, 16)
    tiffcp("cmyk16.tif", "cmyk16_lzw.tif", "-c", "lzw")
    write_raw("gray_float32.tif", g16, 1, 16, sample_format=3)  # refused by both
    for bits in (1, 2, 4, 8):
        n = 2**bits
        cmap = list(rng.integers(0, 65536, 3 * n))
        write_raw(f"palette{bits}.tif", rng.integers(0, n, (h, w)), 3, bits, colormap=cmap)
    cmap = list(rng.integers(0, 65536, 3 * 256))
    idx = rng.integers(0, 256, (h, w, 1))
    write_raw("palette_px.tif", np.concatenate([idx, a], 2), 3, 8, colormap=cmap, extras=(0,))
    write_raw("palette_pa.tif", np.concatenate([idx, a], 2), 3, 8, colormap=cmap, extras=(2,))
    planes = [pack_rows(gray, 8, False), pack_rows(alpha, 8, False)]
    (CASES / "la_planar.tif").write_bytes(
        tiff_bytes(w, h, 1, 8, planes, planar=2, extras=(2,)))
    # Planar files are compressed: Pillow reads uncompressed ones without libtiff, and its raw
    # reader has no unpacker for a premultiplied alpha plane.
    tiffcp("rgba_assoc.tif", "rgba_assoc_planar_lzw.tif", "-p", "separate", "-c", "lzw")
    even = arr[:28, :36]
    for hs, vs in ((1, 1), (2, 2), (2, 1)):
        data = ycbcr_units(even, hs, vs)
        (CASES / f"ycbcr{hs}{vs}_raw.tif").write_bytes(
            tiff_bytes(36, 28, 6, 8, [data], samples=3, ycbcr_subsampling=(hs, vs)))
    (CASES / "ycbcr22_deflate.tif").write_bytes(
        tiff_bytes(36, 28, 6, 8, [ycbcr_units(even, 2, 2)], samples=3, ycbcr_subsampling=(2, 2),
                   deflate=True))
    small = arr[:5, :7]
    for orientation in range(1, 9):
        write_raw(f"orientation{orientation}.tif", small, 2, 8, orientation=orientation)
    tiffcp("orientation6.tif", "orientation6_lzw.tif", "-c", "lzw")


def make_documents():
    """Two real pages: the Azure invoice scan (1700x2200 gray) as CCITT G4 bilevel, and a crop
    of the SROIE receipt as LZW gray with the horizontal predictor."""
    scan = Image.open(IMAGES / "azure_invoice_sample.jpg").convert("L")
    scan.point(lambda v: 255 if v > 160 else 0).convert("1", dither=Image.Dither.NONE).save(
        CASES / "doc_azure_invoice_g4.tif", compression="group4")
    receipt = Image.open(IMAGES / "sroie_000.jpg").convert("L").crop((0, 0, 463, 240))
    receipt.save(CASES / "doc_sroie_gray_raw.tif")
    tiffcp("doc_sroie_gray_raw.tif", "doc_sroie_gray_lzw.tif", "-c", "lzw:2")
    (CASES / "doc_sroie_gray_raw.tif").unlink()


# Files Pillow cannot open that docfeed decodes, each a lossless tiffcp copy of a file Pillow does
# open: docfeed's pixels must equal Pillow's pixels of the source.
LOSSLESS_COPIES = {"rgb_bigtiff_be_tiled.tif": "rgb_raw.tif"}


def reference(img):
    if img.mode in ("1", "I;16", "I;16B"):
        return img.convert("L")
    if img.mode == "P":
        return img.convert("RGB")
    if img.mode == "PA":
        return img.convert("RGBA")
    if img.mode == "CMYK":
        return img.convert("RGB")
    return img


def page_entry(img):
    orientation = img.tag_v2.get(0x0112, 1)
    width, height = img.size
    if orientation in (5, 6, 7, 8):  # Pillow's size is already the turned one.
        width, height = height, width
    entry = {"mode": img.mode, "width": width, "height": height,
             "orientation": orientation if orientation in range(1, 9) else 1}
    img.load()
    ref = reference(img)
    arr = np.ascontiguousarray(np.asarray(ref, dtype=np.uint8))
    entry.update({"channels": 1 if arr.ndim == 2 else arr.shape[2],
                  "out_width": arr.shape[1], "out_height": arr.shape[0],
                  "xxh3": f"{xxhash.xxh3_64_intdigest(arr.tobytes()):016x}"})
    return entry


def expected_entry(path):
    entry = {"file": path.name, "bytes": path.stat().st_size}
    try:
        with Image.open(path) as img:
            frames = getattr(img, "n_frames", 1)
            pages = []
            for k in range(frames):
                img.seek(k)
                pages.append(page_entry(img))
        entry.update({"frames": frames, "pages": pages})
    except Exception as e:  # noqa: BLE001 -- any Pillow failure means docfeed must refuse too
        entry["pillow_error"] = f"{type(e).__name__}: {e}".replace(str(path), path.name)
        if path.name in LOSSLESS_COPIES:
            entry["lossless_copy_of"] = LOSSLESS_COPIES[path.name]
    return entry


def main():
    shutil.rmtree(CASES, ignore_errors=True)
    CASES.mkdir(parents=True)
    rgb, rng, alpha = base_images()
    make_pillow_cases(rgb, alpha)
    make_tiffcp_cases()
    make_raw_cases(rgb, rng, alpha)
    make_documents()
    files = sorted(CASES.glob("*.tif"))
    expected = {"pillow": PIL.__version__, "libtiff_in_pillow": features.version("libtiff"),
                "cases": [expected_entry(p) for p in files]}
    EXPECTED.write_text(json.dumps(expected, indent=1) + "\n")
    total = sum(p.stat().st_size for p in files)
    for e in expected["cases"]:
        modes = [p["mode"] for p in e.get("pages", [])]
        print(f"{e['file']:34} {e['bytes']:7} {modes or e.get('pillow_error')}")
    print(f"{len(files)} files, {total} bytes")


if __name__ == "__main__":
    main()

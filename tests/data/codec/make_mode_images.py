#!/usr/bin/env python3
"""Writes tests/data/images/modes/: the inputs Pillow opens that need a conversion or a choice
of frame to become docfeed's 8-bit pixels, and JPEGs that libjpeg-turbo decodes with warnings.

make_golden.py calls make() before it hashes every test image with Pillow, so golden.json holds
Pillow's mode, size, n_frames and pixels for each file written here. Run from the repository root
with the project's virtual environment:

    .venv/bin/python tests/data/codec/make_mode_images.py   (or make_golden.py, which runs it)

Everything is made by Pillow from a crop of tests/data/images/sroie_000.jpg; where Pillow cannot
write a variant (no Adobe marker, YCCK, a GIF frame off the screen origin, corrupt entropy data),
the bytes Pillow wrote are patched, as each function says. Files stay tiny (a few KB each).
"""

import io
import pathlib

import numpy as np
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[3]
IMAGES = ROOT / "tests/data/images"
MODES = IMAGES / "modes"


def _jpeg(img, **kw):
    buf = io.BytesIO()
    img.save(buf, format="JPEG", **kw)
    return bytearray(buf.getvalue())


def _segment(data, marker):
    """Offset of the first marker segment `marker` (e.g. 0xEE for APP14) in a JPEG."""
    pos = 2
    while pos + 4 <= len(data) and data[pos] == 0xFF:
        if data[pos + 1] == marker:
            return pos
        if data[pos + 1] == 0xDA:
            break
        pos += 2 + int.from_bytes(data[pos + 2:pos + 4], "big")
    raise ValueError(f"no marker FF{marker:02X}")


def _entropy_start(data):
    sos = _segment(data, 0xDA)
    return sos + 2 + int.from_bytes(data[sos + 2:sos + 4], "big")


def make_cmyk(crop):
    cmyk = crop.resize((45, 37)).convert("CMYK")
    # Pillow writes CMYK inverted ("CMYK;I") with libjpeg's APP14 Adobe marker, transform 0.
    adobe = _jpeg(cmyk, quality=90)
    (MODES / "cmyk_adobe.jpg").write_bytes(bytes(adobe))
    # The same scan without the Adobe marker: libjpeg still reads 4 components as CMYK, and
    # Pillow still inverts them ("assume adobe conventions").
    app14 = _segment(adobe, 0xEE)
    length = 2 + int.from_bytes(adobe[app14 + 2:app14 + 4], "big")
    (MODES / "cmyk_no_adobe.jpg").write_bytes(bytes(adobe[:app14] + adobe[app14 + length:]))
    # YCCK: Pillow cannot write it, so store YCbCr planes (and a K ramp) as the four components
    # of a CMYK file and set the Adobe transform byte to 2 (YCCK): libjpeg then converts
    # YCCK -> CMYK on decode, for Pillow as for docfeed. Pillow stores 255 - v, hence the inversion.
    ycc = np.asarray(crop.resize((41, 33)).convert("YCbCr"))
    k = np.tile((np.arange(41, dtype=np.uint16) * 6).astype(np.uint8), (33, 1))
    planes = np.dstack([ycc, k[..., None]])
    ycck = _jpeg(Image.fromarray(255 - planes, "CMYK"), quality=92)
    app14 = _segment(ycck, 0xEE)
    assert ycck[app14 + 4:app14 + 9] == b"Adobe"
    ycck[app14 + 15] = 2
    (MODES / "ycck.jpg").write_bytes(bytes(ycck))


def make_gray16():
    rng = np.random.default_rng(16)
    # Half the samples below 256, so Pillow's clip in convert("L") is visible both ways.
    small = rng.integers(0, 256, (23, 31))
    large = rng.integers(256, 65536, (23, 31))
    px = np.where(rng.random((23, 31)) < 0.5, small, large).astype(np.uint16)
    Image.fromarray(px).save(MODES / "gray16_mixed.png")  # mode I;16, 16-bit gray PNG


def make_gifs(crop):
    small = crop.resize((57, 45))
    frames = [small.quantize(16), small.rotate(90).quantize(16),
              small.transpose(Image.Transpose.FLIP_LEFT_RIGHT).quantize(16)]
    for f in frames:
        f.info.pop("comment", None)
    frames[0].save(MODES / "anim.gif", save_all=True, append_images=frames[1:], duration=100,
                   loop=0)
    frames[0].save(MODES / "anim_trns.gif", save_all=True, append_images=frames[1:],
                   duration=100, transparency=3)
    frames[0].save(MODES / "interlaced.gif", interlace=True)
    gray = small.convert("L")
    gray.info.pop("comment", None)
    gray.save(MODES / "gray_ramp.gif", optimize=False, transparency=200)  # Pillow: mode L
    # Frame 0 smaller than the logical screen and off its origin, with a transparent index:
    # Pillow fills the screen with that index. Then a frame reaching past the screen, which
    # Pillow grows to hold it.
    buf = io.BytesIO()
    frames[0].resize((20, 14)).save(buf, format="GIF", transparency=5)
    data = bytearray(buf.getvalue())
    desc = data.index(b"\x2c\x00\x00\x00\x00\x14\x00\x0e\x00")
    data[6:10] = (31).to_bytes(2, "little") + (27).to_bytes(2, "little")  # screen 31x27
    data[desc + 1:desc + 5] = (7).to_bytes(2, "little") + (9).to_bytes(2, "little")
    (MODES / "offset_trns.gif").write_bytes(bytes(data))
    data[6:10] = (12).to_bytes(2, "little") + (10).to_bytes(2, "little")  # screen 12x10
    (MODES / "past_screen.gif").write_bytes(bytes(data))


def make_animations(crop):
    small = crop.resize((57, 45))
    rgba = np.array(small.convert("RGBA"))
    rgba[..., 3] = (np.arange(57)[None, :] * 4).astype(np.uint8)
    rgba = Image.fromarray(rgba, "RGBA")
    small.save(MODES / "anim_lossy.webp", save_all=True,
               append_images=[small.rotate(90), small.rotate(180)], duration=100, quality=80)
    rgba.save(MODES / "anim_alpha.webp", save_all=True, append_images=[rgba.rotate(90)],
              duration=100, lossless=True, exact=True)
    # APNG whose default image (IDAT) is frame 0, and one whose default image is not part of
    # the animation (Pillow counts it as an extra frame 0 all the same).
    small.save(MODES / "anim.png", save_all=True, append_images=[small.rotate(90)])
    small.save(MODES / "anim_default_image.png", save_all=True,
               append_images=[small.rotate(90), small.rotate(180)], default_image=True)


def make_corrupt_jpegs(crop):
    good = _jpeg(crop.resize((64, 48)), quality=90)
    start = _entropy_start(good)
    mid = (start + len(good)) // 2
    # Entropy bytes replaced by a run of 32 one bits (0xFF is stuffed as FF 00 in the scan): no
    # Huffman table has an all-ones code, so libjpeg warns "Corrupt JPEG data: bad Huffman code"
    # and goes on (Pillow decodes). Merely flipped bytes often decode to valid codes instead.
    huff = bytearray(good)
    huff[mid:mid + 8] = b"\xff\x00" * 4
    (MODES / "warn_huffman.jpg").write_bytes(bytes(huff))
    # The scan cut short and an EOI put right after it: "premature end of data segment"; the
    # rest of the image is libjpeg's gray fill (Pillow decodes).
    (MODES / "warn_eoi_in_scan.jpg").write_bytes(bytes(good[:mid] + b"\xff\xd9"))
    # Stray bytes before the SOS marker: "Corrupt JPEG data: 3 extraneous bytes before marker".
    sos = _segment(good, 0xDA)
    (MODES / "warn_extraneous.jpg").write_bytes(bytes(good[:sos] + b"\x00\x11\x22" + good[sos:]))
    # The file cut in its scan, no EOI: Pillow raises "image file is truncated".
    (MODES / "truncated.jpg").write_bytes(bytes(good[:mid]))


def make():
    MODES.mkdir(parents=True, exist_ok=True)
    receipt = Image.open(IMAGES / "sroie_000.jpg").convert("RGB")
    crop = receipt.crop((40, 120, 40 + 161, 120 + 203))
    make_cmyk(crop)
    make_gray16()
    make_gifs(crop)
    make_animations(crop)
    make_corrupt_jpegs(crop)


if __name__ == "__main__":
    make()
    for p in sorted(MODES.iterdir()):
        print(p.relative_to(ROOT), p.stat().st_size)

#!/usr/bin/env python3
"""Checks that Pillow, the reference decoder, reads docfeed's encoder output as intended.

    mkdir -p /tmp/codec_dump
    DOCFEED_CODEC_DUMP_DIR=/tmp/codec_dump build/bin/codec_test --gtest_filter='Encode*'
    .venv/bin/python tests/data/codec/check_encoded_with_pillow.py /tmp/codec_dump

codec_test writes each encoded file next to `<file>.<W>x<H>x<C>.raw`, the pixels it encoded.
PNG and WebP (lossless) must decode in Pillow to exactly those pixels (gray widened to RGB(A)
for WebP); JPEG must open with the same size and mode (L or RGB) and a mean error below 2.
"""

import pathlib
import sys

import numpy as np
from PIL import Image

MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def expected_webp(raw):
    if raw.shape[2] >= 3:
        return raw
    rgb = np.repeat(raw[:, :, :1], 3, axis=2)
    return np.concatenate([rgb, raw[:, :, 1:]], axis=2) if raw.shape[2] == 2 else rgb


def check(path, raw_path):
    w, h, c = (int(v) for v in raw_path.name.rsplit(".", 2)[1].split("x"))
    raw = np.fromfile(raw_path, dtype=np.uint8).reshape(h, w, c)
    with Image.open(path) as img:
        img.load()
        got = np.asarray(img)
        if got.ndim == 2:
            got = got[:, :, None]
        if img.size != (w, h):
            return f"size {img.size} != {(w, h)}"
        if path.suffix == ".png":
            ok = img.mode == MODES[c] and np.array_equal(got, raw)
            return None if ok else f"mode {img.mode} or pixels differ"
        if path.suffix == ".webp":
            want = expected_webp(raw)
            ok = img.mode == MODES[want.shape[2]] and np.array_equal(got, want)
            return None if ok else f"mode {img.mode} or pixels differ"
        mae = np.abs(got.astype(int) - raw.astype(int)).mean()
        ok = img.mode == MODES[c] and mae < 2.0
        return None if ok else f"mode {img.mode}, mean abs error {mae:.2f}"


def main():
    folder = pathlib.Path(sys.argv[1])
    failures = 0
    files = sorted(p for p in folder.iterdir() if p.suffix in (".png", ".webp", ".jpg"))
    for path in files:
        raw_path = next(folder.glob(path.name + ".*.raw"))
        problem = check(path, raw_path)
        failures += problem is not None
        print(f"{'FAIL' if problem else 'ok  '} {path.name}" + (f": {problem}" if problem else ""))
    print(f"{len(files) - failures}/{len(files)} files read by Pillow as expected")
    return 1 if failures or not files else 0


if __name__ == "__main__":
    sys.exit(main())

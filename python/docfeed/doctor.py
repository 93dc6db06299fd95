"""`docfeed doctor PATH`: where is the input bottleneck of a Donut training job, measured.

PATH is a `datasets` save_to_disk directory (a Dataset or a DatasetDict: the "train" split, else
the first, is examined), an image folder (images + optional metadata.jsonl, `datasets`'
imagefolder layout) or a docfeed dataset. The report has three parts:

1. What is stored (pyarrow only, no `datasets` needed): columns and types, samples, bytes per
   sample, the total against this machine's RAM, and named pathologies (float32 tensors stored
   as nested lists, padding baked in at preprocessing, no format set, huge rows, raw pixels).
2. Measured on a sample of the user's own data, within --max-seconds (default 60 s): the
   sequential read rate of a data file after asking the kernel to drop it from the page cache
   (posix_fadvise DONTNEED), the time per batch of the user's path (load_from_disk + a torch
   DataLoader with transformers' default_data_collator, at 0 and at N workers; for an image
   folder the on-the-fly path: datasets Image column + DonutImageProcessor), or, without
   datasets/torch, what pyarrow can measure (read + to_pylist); and docfeed's time per batch on
   the same samples (the sample packed or migrated into a temporary directory, then
   `docfeed bench --json --dtype uint8` at N threads, uint8 being what the GPU path copies).
3. The GPU's appetite: Donut-base training FLOPs per sample at the dataset's image size (formula
   in `donut_base_train_flops`), divided by an assumed sustained throughput (--gpu, --mfu) or
   the user's --step-time, then per pipeline the GPU's busy fraction, the epoch and job time and
   the fix.

Contract: --json writes at least the keys `make demo` reads (path, kind, samples, bytes_on_disk,
bytes_per_sample, ram_bytes, image_size, pathologies [{id, message}], disk_read_mb_s,
gpu {step_s, source, device}, batch_size, epochs, assume_samples, pipelines [{name, batch_s,
stages, gpu_busy, epoch_s, job_s}], fix); more keys are allowed, these must stay. Errors (not a dataset, a truncated or
corrupt Arrow file, unreadable images) raise DoctorError naming the path; `main` prints them and
returns 1. Nothing is written outside a temporary directory except --report and --json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff", ".bmp", ".gif"}
HUGE_ROW_BYTES = 1 << 20  # a row above 1 MiB: a page as a compressed image is 0.05-0.5 MB
DEFAULT_SIZE = (1553, 1200)  # the recipe's DonutProcessor size (H, W)
# Dense bf16/fp16 tensor-core peaks from the vendors' datasheets (SXM parts), FLOP/s.
GPU_PEAK = {"h100": 989e12, "h200": 989e12, "a100": 312e12}
DEFAULT_MFU = 0.35  # sustained fraction of peak assumed for Donut-base (windowed attention)
# Normalizations Donut datasets are made with: (mean, std) per channel.
NORMALIZATIONS = {"donut (0.5/0.5)": ((0.5,) * 3, (0.5,) * 3),
                  "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))}


class DoctorError(Exception):
    """A problem with the user's data or arguments; the message names the path."""


# ----------------------------------------------------------------------------------------------
# The GPU's appetite: Donut-base FLOPs.


def _swin_stage_flops(gh: int, gw: int, dim: int, depth: int, window: int) -> float:
    """Multiply-accumulates of one DonutSwin stage on a gh x gw token grid.

    As transformers' DonutSwinLayer: when the grid is not larger than the window, the window
    shrinks to the grid's smaller side; the grid is zero-padded to whole windows before the
    attention (so Q/K/V and the output projection run on the padded tokens), the MLP (ratio 4)
    runs on the real tokens. Per block: 4 Np C^2 (qkv + proj) + 2 Np w^2 C (QK^T and AV) +
    8 N C^2 (MLP)."""
    if min(gh, gw) <= window:
        window = min(gh, gw)
    n = gh * gw
    n_pad = math.ceil(gh / window) * window * math.ceil(gw / window) * window
    per_block = 4 * n_pad * dim * dim + 2 * n_pad * window * window * dim + 8 * n * dim * dim
    return float(depth * per_block)


def donut_base_train_flops(height: int, width: int, target_length: int = 512,
                           vocab: int = 57580) -> Dict[str, float]:
    """FLOPs of one Donut-base training sample (forward + backward) at height x width.

    Architecture (docs/context.md section 3): DonutSwin encoder, patch 4, embed 128,
    depths [2, 2, 14, 2], window 10, channels doubling per stage (patch merging: the grid is
    padded to even sides, then 4C -> 2C on the merged tokens); MBart decoder, 4 layers, d_model
    1024, FFN 4096, `target_length` tokens (the recipe pads labels to 512), cross-attention over
    the encoder's last-stage tokens, LM head over `vocab` tokens (cord-v2: 57,580).
    Counted: the matrix products (2 FLOPs per multiply-accumulate), as torch's FlopCounterMode
    does; norms, softmax and activations are left out (< 2 %). Training = 3 x forward (the
    backward pass costs two forwards). Check: at 1553 x 1200 this gives 3.56 TFLOP per sample
    (encoder 1.02, decoder 0.17 TFLOP forward) against ~3.7 in docs/context.md section 2;
    tests/python/test_doctor.py compares the formula with FlopCounterMode on the real
    transformers model (meta tensors)."""
    gh, gw = math.ceil(height / 4), math.ceil(width / 4)
    dims, depths = [128, 256, 512, 1024], [2, 2, 14, 2]
    enc = gh * gw * (3 * 4 * 4) * dims[0]  # patch embedding: a 4x4 stride-4 convolution
    for stage, (dim, depth) in enumerate(zip(dims, depths)):
        enc += _swin_stage_flops(gh, gw, dim, depth, 10)
        if stage < 3:  # patch merging: 4C -> 2C on the (even-padded) half-size grid
            gh, gw = math.ceil(gh / 2), math.ceil(gw / 2)
            enc += gh * gw * (4 * dim) * (2 * dim)
    n_enc, d, ffn, seq = gh * gw, 1024, 4096, target_length
    per_layer = (4 * seq * d * d + 2 * seq * seq * d  # self-attention
                 + 2 * seq * d * d + 2 * n_enc * d * d + 2 * seq * n_enc * d  # cross-attention
                 + 2 * seq * d * ffn)  # feed-forward
    dec = 4 * per_layer + seq * d * vocab  # 4 layers + LM head
    forward = 2.0 * (enc + dec)
    return {"encoder_forward": 2.0 * enc, "decoder_forward": 2.0 * dec, "forward": forward,
            "train": 3.0 * forward}


# ----------------------------------------------------------------------------------------------
# Small helpers.


def ram_bytes() -> Tuple[int, int]:
    """(MemTotal, MemAvailable) of /proc/meminfo in bytes; (0, 0) where it cannot be read."""
    values = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                key, rest = line.split(":", 1)
                values[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError):
        return 0, 0
    return values.get("MemTotal", 0), values.get("MemAvailable", values.get("MemTotal", 0))


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} TB"


def human_seconds(s: float) -> str:
    if s < 1:
        return f"{s * 1000:.0f} ms" if s >= 0.01 else f"{s * 1000:.1f} ms"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


class Budget:
    """The --max-seconds time box: measurements ask for a share of what is left."""

    def __init__(self, seconds: float):
        self.start = time.monotonic()
        self.deadline = self.start + seconds

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def share(self, fraction: float, floor: float = 0.5) -> float:
        return max(floor, self.left() * fraction)


def _dir_bytes(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# ----------------------------------------------------------------------------------------------
# Part 1: what is stored.


def _load_json(path: pathlib.Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DoctorError(f"{path}: cannot read JSON: {e}") from None


def detect_kind(path: pathlib.Path) -> str:
    """save_to_disk, docfeed or imagefolder; DoctorError naming `path` otherwise."""
    if not path.exists():
        raise DoctorError(f"{path}: no such file or directory")
    if not path.is_dir():
        raise DoctorError(f"{path}: not a directory (doctor takes a save_to_disk directory, an "
                          "image folder or a docfeed dataset)")
    split = path
    if (path / "dataset_dict.json").exists():
        splits = _load_json(path / "dataset_dict.json").get("splits") or []
        if not splits:
            raise DoctorError(f"{path / 'dataset_dict.json'}: no splits listed")
        split = path / ("train" if "train" in splits else splits[0])
    if (split / "docfeed.json").exists():
        return "docfeed"
    if (split / "state.json").exists():
        return "save_to_disk"
    if (path / "metadata.jsonl").exists() or any(
            p.suffix.lower() in IMAGE_SUFFIXES for p in path.rglob("*") if p.is_file()):
        return "imagefolder"
    raise DoctorError(f"{path}: not a dataset doctor knows: no state.json or dataset_dict.json "
                      "(datasets save_to_disk), no docfeed.json (docfeed), no images or "
                      "metadata.jsonl (image folder)")


def choose_split(path: pathlib.Path) -> Tuple[pathlib.Path, List[str], Optional[str]]:
    """(directory of the examined split, all split names, its name) of a dataset or dict."""
    if (path / "dataset_dict.json").exists():
        splits = list(_load_json(path / "dataset_dict.json").get("splits") or [])
        name = "train" if "train" in splits else splits[0]
        return path / name, splits, name
    return path, [], None


def _feature_type(feature: Any) -> str:
    """A short text for a datasets feature dict (as in dataset_info.json)."""
    if isinstance(feature, list):
        return f"List({_feature_type(feature[0])})" if feature else "List"
    if not isinstance(feature, dict):
        return str(feature)
    kind = feature.get("_type", "?")
    if kind == "Value":
        return feature.get("dtype", "?")
    if kind in ("List", "Sequence", "LargeList"):
        return f"List({_feature_type(feature.get('feature'))})"
    if kind.startswith("Array"):
        return f"{kind}({tuple(feature.get('shape', ()))}, {feature.get('dtype')})"
    return kind


def _tensor_field(schema: Any, features: Dict[str, Any]) -> Optional[str]:
    """The pixel tensor column: pixel_values, else the first 3-level list / ArrayND column."""
    import pyarrow as pa

    def depth(t: Any) -> Tuple[int, Any]:
        n = 0
        while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            t, n = t.value_type, n + 1
        return n, t

    names = list(schema.names)
    candidates = (["pixel_values"] if "pixel_values" in names else []) + names
    for name in candidates:
        feat = features.get(name, {})
        if isinstance(feat, dict) and str(feat.get("_type", "")).startswith("Array"):
            return name
        t = schema.field(name).type
        t = getattr(t, "storage_type", t)
        n, leaf = depth(t)
        if n >= 3 and (pa.types.is_floating(leaf) or pa.types.is_integer(leaf)):
            return name
    return None


def _row_tensor(column: Any, row: int) -> Any:
    """One row of a 3-level list column as a numpy (C, H, W) array (zero copy where it can)."""
    import numpy as np
    import pyarrow as pa

    cell = column.slice(row, 1)
    if hasattr(cell.type, "storage_type"):
        cell = cell.storage
    levels = []
    while pa.types.is_list(cell.type) or pa.types.is_large_list(cell.type) or \
            pa.types.is_fixed_size_list(cell.type):
        cell = cell.flatten()
        levels.append(len(cell))
    if len(levels) != 3 or levels[0] == 0 or levels[1] % levels[0] or levels[2] % levels[1]:
        raise ValueError(f"not a C x H x W tensor (list lengths {levels})")
    c, h = levels[0], levels[1] // levels[0]
    w = levels[2] // levels[1]
    return np.asarray(cell.to_numpy(zero_copy_only=False)).reshape(c, h, w)


def _pad_values(t: Any) -> Optional[Tuple[str, Any]]:
    """(name, per-channel value of uint8 0) of the normalization whose pad value the tensor's
    per-channel minimum equals, or None (then the tensor was not padded with black)."""
    import numpy as np

    if t.shape[0] != 3:
        return None
    mins = t.reshape(3, -1).min(axis=1)
    for name, (mean, std) in NORMALIZATIONS.items():
        # The processor's float32 formula for pixel 0: (0 * (1/255) - mean) / std.
        pad = (np.float32(0) - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
        if np.array_equal(mins.astype(np.float32), pad.astype(np.float32)):
            return name, pad.astype(t.dtype)
    return None


def padding_of(t: Any) -> Optional[Dict[str, Any]]:
    """Border rows/columns that are exactly the pad value in every channel, or None.

    As src/migrate's TightContentBox (on the recovered uint8, "all bytes 0"): a pixel is padding
    when all three channels equal the normalization's value of uint8 0; the borders are the
    leading/trailing rows and columns made only of such pixels. Centred means the offsets are
    the processor's dh // 2, dw // 2 (its default); anything else was random padding."""
    import numpy as np

    found = _pad_values(t)
    if found is None:
        return None
    name, pad = found
    mask = np.all(t == pad[:, None, None], axis=0)  # H x W: pad in every channel
    if mask.all():
        return None  # an all-black tensor: no content to speak of
    rows, cols = mask.all(axis=1), mask.all(axis=0)
    top = int(np.argmin(rows))
    bottom = int(np.argmin(rows[::-1]))
    left = int(np.argmin(cols))
    right = int(np.argmin(cols[::-1]))
    if top + bottom + left + right == 0:
        return None
    centred = top == (top + bottom) // 2 and left == (left + right) // 2
    return {"normalization": name, "top": top, "bottom": bottom, "left": left, "right": right,
            "centred": centred}


class Stored:
    """Part 1's findings, filled by inspect_*."""

    def __init__(self, path: pathlib.Path, kind: str):
        self.path, self.kind = path, kind
        self.split_dir = path
        self.splits: List[str] = []
        self.split: Optional[str] = None
        self.samples = 0
        self.bytes_on_disk = 0
        self.columns: List[Tuple[str, str]] = []
        self.image_size: Optional[Tuple[int, int]] = None
        self.pathologies: List[Dict[str, Any]] = []
        self.data_files: List[pathlib.Path] = []
        self.tensor_column: Optional[str] = None
        self.tensor_dtype: Optional[str] = None
        self.format_type: Optional[str] = None
        self.images: List[pathlib.Path] = []  # imagefolder: in sample order
        self.metadata: List[Dict[str, Any]] = []
        self.notes: List[str] = []

    @property
    def bytes_per_sample(self) -> float:
        return self.bytes_on_disk / self.samples if self.samples else 0.0

    def add(self, pid: str, message: str, **detail: Any) -> None:
        self.pathologies.append({"id": pid, "message": message, **detail})


def inspect_save_to_disk(st: Stored, padding_rows: int, budget: Budget) -> None:
    import pyarrow as pa

    st.split_dir, st.splits, st.split = choose_split(st.path)
    state = _load_json(st.split_dir / "state.json")
    files = state.get("_data_files")
    if not isinstance(files, list) or not files:
        raise DoctorError(f"{st.split_dir / 'state.json'}: field _data_files missing or empty")
    st.data_files = [st.split_dir / f["filename"] for f in files]
    st.format_type = state.get("_format_type")
    info_path = st.split_dir / "dataset_info.json"
    features = _load_json(info_path).get("features") or {} if info_path.exists() else {}
    schema, rows = None, 0
    for f in st.data_files:
        try:
            with pa.memory_map(str(f)) as src:
                reader = pa.ipc.open_stream(src)
                schema = schema or reader.schema
                for batch in reader:  # reads only the messages' metadata (memory-mapped)
                    rows += batch.num_rows
        except FileNotFoundError:
            raise DoctorError(f"{f}: listed in state.json but missing") from None
        except (pa.ArrowInvalid, pa.ArrowException, OSError) as e:
            raise DoctorError(f"{f}: not a readable Arrow stream (truncated or corrupt?): {e}") \
                from None
        st.bytes_on_disk += f.stat().st_size
    st.samples = rows
    if not features and schema.metadata and b"huggingface" in schema.metadata:
        features = json.loads(schema.metadata[b"huggingface"]).get("info", {}).get("features", {})
    for field in schema:
        feat = features.get(field.name)
        kind = _feature_type(feat) if feat is not None else str(field.type)
        st.columns.append((field.name, kind))
    st.tensor_column = _tensor_field(schema, features)
    if st.tensor_column is None:
        st.notes.append("no pixel tensor column (3-level lists or ArrayND): the float32 "
                        "migration does not apply")
    _check_tensors(st, features, padding_rows, budget)
    bps = st.bytes_per_sample
    if bps > HUGE_ROW_BYTES:
        st.add("huge-rows", f"{human_bytes(bps)} per sample: a batch of 8 is "
               f"{human_bytes(8 * bps)} to read and convert per step; the same page as uint8 is "
               f"{human_bytes(bps / 4) if st.tensor_dtype == 'float32' else 'a fraction'}, "
               "as a compressed image 0.05-0.5 MB", bytes_per_sample=bps)


def _check_tensors(st: Stored, features: Dict[str, Any], padding_rows: int,
                   budget: Budget) -> None:
    """Type pathologies of the tensor column, the image size and the padding of sampled rows."""
    import pyarrow as pa

    if st.tensor_column is None:
        return
    name = st.tensor_column
    feat = features.get(name, {})
    is_array = isinstance(feat, dict) and str(feat.get("_type", "")).startswith("Array")
    sampled, padded, centred = 0, 0, 0
    m = min(padding_rows, st.samples)  # rows spread evenly over the split
    wanted = set(int(i * max(st.samples - 1, 0) / max(m - 1, 1)) for i in range(m))
    deadline = time.monotonic() + budget.share(0.15, floor=1.0)
    first, row0 = None, 0
    for f in st.data_files:
        with pa.memory_map(str(f)) as src:
            for batch in pa.ipc.open_stream(src):
                column = batch.column(name)
                for r in range(batch.num_rows):
                    gid = row0 + r
                    if gid not in wanted and not (first is None and gid == 0):
                        continue
                    try:
                        t = _row_tensor(column, r)
                    except ValueError as e:
                        raise DoctorError(f"{f}: column {name}, row {gid}: {e}") from None
                    if first is None:
                        first = t
                    if gid in wanted and time.monotonic() < deadline:
                        sampled += 1
                        p = padding_of(t)
                        if p is not None:
                            padded += 1
                            centred += p["centred"]
                row0 += batch.num_rows
    if first is None:
        return
    st.image_size = (int(first.shape[1]), int(first.shape[2]))
    st.tensor_dtype = str(first.dtype)
    c, h, w = first.shape
    values = c * h * w
    if first.dtype.kind == "f":
        if is_array:
            st.add("float-tensors", f"{name} holds normalized {first.dtype} tensors "
                   f"({feat.get('_type')}, {c}x{h}x{w}): "
                   f"{human_bytes(values * first.dtype.itemsize)} per sample, "
                   "4x a uint8 page and 10-100x a compressed one", dtype=str(first.dtype))
        else:
            pid = "float32-nested-lists" if first.dtype.name == "float32" else "float-nested-lists"
            st.add(pid, f"{name} stores normalized {first.dtype} pixels as nested lists "
                   f"({c}x{h}x{w}): {values:,} numbers per sample that datasets turns into "
                   f"Python floats ({values * 8:,} per batch of 8 through the collator), "
                   f"{human_bytes(values * first.dtype.itemsize)} on disk per sample",
                   dtype=str(first.dtype), floats_per_sample=values)
    else:
        st.add("raw-pixels", f"{name} stores raw {first.dtype} pixels ({c}x{h}x{w}, "
               f"{human_bytes(values * first.dtype.itemsize)} per sample) instead of an "
               "encoded image", dtype=str(first.dtype))
    if padded:
        off = padded - centred
        if off:
            msg = (f"{padded} of {sampled} sampled rows carry padding baked in at preprocessing, "
                   f"{off} of them off-centre: random_padding was drawn once at dataset.map "
                   "time, so every epoch sees the same offsets (augmentation frozen)")
        else:
            msg = (f"{padded} of {sampled} sampled rows carry centred padding baked in at "
                   "preprocessing: the offsets never change between epochs (no random-padding "
                   "augmentation is possible; docfeed redraws it per epoch after migration)")
        st.add("frozen-padding", msg, sampled=sampled, padded=padded, centred=centred,
               off_centre=off)
    if st.format_type is None:  # ArrayND columns come back as nested lists too
        st.add("no-format", "no format set (state.json _format_type null): each row comes back "
               "as Python lists; ds.with_format('torch') would skip the Python objects but "
               "still read and copy every float", format=None)


def inspect_imagefolder(st: Stored, size: Tuple[int, int]) -> None:
    root = st.path
    meta_path = root / "metadata.jsonl"
    if meta_path.exists():
        with open(meta_path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as e:
                    raise DoctorError(f"{meta_path}: line {n}: not JSON: {e}") from None
                name = row.get("file_name") if isinstance(row, dict) else None
                if not isinstance(name, str):
                    raise DoctorError(f"{meta_path}: line {n}: no file_name")
                if not (root / name).is_file():
                    raise DoctorError(f"{meta_path}: line {n}: {root / name} does not exist")
                st.images.append(root / name)
                st.metadata.append(row)
        for key, value in (st.metadata[0].items() if st.metadata else []):
            st.columns.append((key, type(value).__name__))
    else:
        st.images = sorted(p for p in root.rglob("*")
                           if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        st.metadata = [{"file_name": str(p.relative_to(root))} for p in st.images]
    st.columns.insert(0, ("image", "encoded image file"))
    st.samples = len(st.images)
    st.bytes_on_disk = sum(p.stat().st_size for p in st.images)
    st.data_files = list(st.images)
    st.image_size = size
    if st.samples and st.bytes_per_sample > HUGE_ROW_BYTES:
        st.add("huge-rows", f"{human_bytes(st.bytes_per_sample)} per image file: decoding "
               "large scans dominates; packing with --preprocess donut stores the resized page")


def inspect_docfeed(st: Stored) -> None:
    st.split_dir, st.splits, st.split = choose_split(st.path)
    manifest = _load_json(st.split_dir / "docfeed.json")
    st.samples = int(manifest.get("num_samples", 0))
    st.bytes_on_disk = _dir_bytes(st.split_dir)
    st.columns = [(manifest.get("image_column", "image"), f"image ({manifest.get('codec')})")]
    st.columns += [(c["name"], c["type"]) for c in manifest.get("columns", [])]
    pre = manifest.get("preprocess") or {}
    if pre.get("preset"):
        st.image_size = (int(pre["height"]), int(pre["width"]))
    st.data_files = [st.split_dir / f["name"] if isinstance(f, dict) else st.split_dir / f
                     for f in manifest.get("data_files", [])]
    st.data_files = [f for f in st.data_files if f.is_file()]


# ----------------------------------------------------------------------------------------------
# Part 2: measurements.


def measure_disk(files: Sequence[pathlib.Path], seconds: float,
                 limit: int = 1 << 30) -> Dict[str, Any]:
    """Sequential read rate: cold (page cache dropped first with posix_fadvise DONTNEED, after
    fdatasync so dirty pages can go) and warm (the same bytes again)."""
    files = sorted(files, key=lambda p: -p.stat().st_size)[:8]
    buf = bytearray(8 << 20)
    dropped = hasattr(os, "posix_fadvise")

    def read(cold: bool, budget_s: float) -> Tuple[int, float]:
        nonlocal dropped
        total, start = 0, time.monotonic()
        for f in files:
            fd = os.open(f, os.O_RDONLY)
            try:
                if cold and hasattr(os, "posix_fadvise"):
                    try:
                        os.fdatasync(fd)
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    except OSError:
                        dropped = False
                while total < limit and time.monotonic() - start < budget_s:
                    n = os.readv(fd, [buf])
                    if n <= 0:
                        break
                    total += n
            finally:
                os.close(fd)
            if total >= limit or time.monotonic() - start >= budget_s:
                break
        return total, max(time.monotonic() - start, 1e-9)

    cold_bytes, cold_s = read(True, seconds * 0.7)
    warm_bytes, warm_s = read(False, seconds * 0.3)
    cold = cold_bytes / cold_s / 1e6
    warm = warm_bytes / warm_s / 1e6
    likely_warm = (not dropped) or (cold > 0.6 * warm and cold > 3000)
    return {"cold_mb_s": cold, "warm_mb_s": warm, "bytes": cold_bytes, "dropped": dropped,
            "likely_warm": likely_warm}


def _default_collator() -> Tuple[Any, str]:
    """transformers' default_data_collator (what Trainer uses with no tokenizer), or the same
    rule written out: torch.tensor over the batch's values, strings dropped."""
    try:
        from transformers import default_data_collator

        return default_data_collator, "transformers.default_data_collator"
    except Exception:  # noqa: BLE001 - transformers missing or broken: same rule, inline
        import torch

        def collate(features: List[Dict[str, Any]]) -> Dict[str, Any]:
            out = {}
            for key, value in features[0].items():
                if value is None or isinstance(value, str):
                    continue
                if isinstance(value, torch.Tensor):
                    out[key] = torch.stack([f[key] for f in features])
                else:
                    out[key] = torch.tensor([f[key] for f in features])
            return out

        return collate, "default_data_collator's rule (torch.tensor per column)"


def _time_loader(dataset: Any, batch_size: int, workers: int, batches: int, seconds: float,
                 collate: Any) -> Dict[str, Any]:
    """Wall time per batch of a torch DataLoader over `dataset` (at least `batches` batches,
    more while time is left); at 0 workers also the collate share."""
    import torch

    spent = {"collate": 0.0}

    def timed(features: Any) -> Any:
        t = time.perf_counter()
        out = collate(features)
        spent["collate"] += time.perf_counter() - t
        return out

    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False,
                                         num_workers=workers, collate_fn=timed, drop_last=True)
    start = time.perf_counter()
    n = 0
    it = iter(loader)
    try:
        for _ in range(len(loader)):
            next(it)
            n += 1
            if n >= batches and time.perf_counter() - start >= seconds:
                break
    finally:
        del it
    wall = time.perf_counter() - start
    out = {"batches": n, "batch_s": wall / max(n, 1)}
    if workers == 0:
        c = spent["collate"] / max(n, 1)
        out["stages"] = {"fetch + to Python": out["batch_s"] - c, "collate": c}
    else:
        out["stages"] = {f"{workers} workers (fetch + collate)": out["batch_s"]}
    return out


def measure_user_save_to_disk(st: Stored, k: int, batch: int, workers: int, budget: Budget,
                              notes: List[str]) -> List[Dict[str, Any]]:
    """load_from_disk + DataLoader (default collator) at 0 and `workers` workers, or without
    datasets/torch the pyarrow read + to_pylist cost."""
    try:
        import datasets
        import torch  # noqa: F401
    except ImportError as e:
        notes.append(f"datasets/torch not importable ({e}): measured what pyarrow can, the read "
                     "and the conversion to Python objects datasets does with no format set "
                     "(to_pylist); the collator's torch.tensor over the nested lists comes on "
                     "top of it")
        return [_measure_pylist(st, k, batch, budget)]
    ds = datasets.load_from_disk(str(st.split_dir))
    sub = ds.select(range(min(k, len(ds))))
    collate, collate_name = _default_collator()
    notes.append(f"user path: datasets {datasets.__version__} load_from_disk, torch DataLoader, "
                 f"collate_fn = {collate_name}, format as stored "
                 f"({st.format_type or 'none: Python lists'})")
    return _measure_pair(sub, batch, workers, budget, collate, "datasets + DataLoader", None)


def _measure_pair(dataset: Any, batch: int, workers: int, budget: Budget, collate: Any,
                  name: str, stage0: Optional[str]) -> List[Dict[str, Any]]:
    """The DataLoader at 0 and at `workers` workers, time-boxed.

    A one-sample probe gives the cost per sample c. When a whole batch does not fit in a run's
    share of the budget, the run uses smaller batches (at least one sample per worker) and its
    times are scaled to `batch` (the fetch, the conversion and the collate are all linear in
    the samples); the result records the batch size it measured."""
    import torch.utils.data

    probe = _time_loader(dataset, 1, 0, 1, 0.0, collate)
    per_sample = max(probe["batch_s"], 1e-6)
    out = []
    for w in (0, workers):
        share = budget.share(0.4 if w == 0 else 0.9, floor=0.0)
        # Workers share the cores with everything else: size their run for half the share.
        fit = share if w == 0 else share / 2
        b = batch if per_sample * batch <= fit else max(1, int(fit // per_sample))
        b = min(b, batch, max(1, len(dataset) // max(w, 1)))
        # With workers, exactly one batch each: nothing is left in flight at shutdown.
        data = dataset if w == 0 else torch.utils.data.Subset(dataset, range(b * w))
        r = probe if (w == 0 and b == 1) else _time_loader(data, b, w, max(w, 1), share, collate)
        scale = batch / b
        stages = {k: v * scale for k, v in r["stages"].items()}
        if stage0 and w == 0:
            stages = {stage0: sum(stages.values())}
        out.append({"name": f"{name}, {w} workers", "batch_s": r["batch_s"] * scale,
                    "stages": stages, "workers": w, "measured_batches": r["batches"],
                    "measured_batch_size": b, "kind": "user"})
    return out


def _rows(st: Stored) -> Any:
    """(record batch, row) of the examined split, in storage order."""
    import pyarrow as pa

    for f in st.data_files:
        with pa.memory_map(str(f)) as src:
            for b in pa.ipc.open_stream(src):
                for r in range(b.num_rows):
                    yield b, r


def _measure_pylist(st: Stored, k: int, batch: int, budget: Budget) -> Dict[str, Any]:
    """What datasets does per row with no format set, measured with pyarrow alone: up to k rows
    (at least one, then while the share of the budget lasts) converted with to_pylist, the
    mean scaled to a batch."""
    limit = time.perf_counter() + budget.share(0.4)
    rows, convert = 0, 0.0
    for b, r in _rows(st):
        t = time.perf_counter()
        b.slice(r, 1).to_pylist()
        convert += time.perf_counter() - t
        rows += 1
        if rows >= k or time.perf_counter() > limit:
            break
    per_row = convert / max(rows, 1)
    return {"name": "pyarrow read + to_pylist, 1 process", "batch_s": per_row * batch,
            "stages": {"read + to Python": per_row * batch}, "workers": 0,
            "measured_batches": rows / batch, "measured_batch_size": min(rows, batch),
            "kind": "user"}


def measure_user_imagefolder(st: Stored, k: int, batch: int, workers: int, budget: Budget,
                             notes: List[str]) -> List[Dict[str, Any]]:
    """The on-the-fly path: a datasets Image column decoded by PIL and DonutImageProcessor in a
    set_transform, DataLoader at 0 and N workers."""
    try:
        import datasets
        import torch  # noqa: F401
    except ImportError as e:
        notes.append(f"datasets/torch not importable ({e}): the Python path was not measured")
        return []
    h, w = st.image_size or DEFAULT_SIZE
    try:
        from transformers import DonutImageProcessor

        proc = DonutImageProcessor(size={"height": h, "width": w}, do_align_long_axis=False)

        def transform(b: Dict[str, Any]) -> Dict[str, Any]:
            px = proc([im.convert("RGB") for im in b["image"]], random_padding=True,
                      return_tensors="pt")["pixel_values"]
            return {"pixel_values": list(px)}

        label = "DonutImageProcessor"
    except Exception:  # noqa: BLE001 - no transformers: PIL decode + resize only
        import numpy as np

        def transform(b: Dict[str, Any]) -> Dict[str, Any]:
            out = []
            for im in b["image"]:
                im = im.convert("RGB")
                im.thumbnail((w, h))
                out.append(torch.from_numpy(np.asarray(im).copy()))
            return {"pixel_values": out}

        label = "PIL decode + thumbnail (transformers not importable)"
    files = [str(p) for p in st.images[:k]]
    ds = datasets.Dataset.from_dict({"image": files}).cast_column("image", datasets.Image())
    ds.set_transform(transform)
    notes.append(f"user path (image folder): datasets Image column + {label} in set_transform, "
                 "torch DataLoader")
    import torch.utils.data

    def collate(rows: List[Dict[str, Any]]) -> Any:
        px = [r["pixel_values"] for r in rows]
        try:
            return torch.stack(px)
        except RuntimeError:  # PIL-only fallback: sizes differ
            return px

    short = label.split(" (")[0]
    return _measure_pair(ds, batch, workers, budget, collate, f"datasets Image + {short}",
                         f"decode + {short}")


def _cli() -> str:
    from docfeed import cli_path

    return cli_path()


def _run_cli(args: Sequence[str], timeout: float) -> subprocess.CompletedProcess:
    proc = subprocess.run([_cli(), *map(str, args)], capture_output=True, text=True,
                          timeout=max(timeout, 5.0))
    if proc.returncode != 0:
        raise DoctorError(f"docfeed {' '.join(map(str, args[:2]))} failed: "
                          f"{(proc.stderr or proc.stdout).strip()[-600:]}")
    return proc


def _write_sample_save_to_disk(st: Stored, k: int, dest: pathlib.Path) -> int:
    """The first k rows of the examined split as a save_to_disk directory (pyarrow: the same
    schema, state.json and dataset_info.json). Returns the rows written."""
    import pyarrow as pa

    dest.mkdir(parents=True)
    out_file = dest / "data-00000-of-00001.arrow"
    left, writer = k, None
    with pa.OSFile(str(out_file), "wb") as sink:
        for f in st.data_files:
            with pa.memory_map(str(f)) as src:
                reader = pa.ipc.open_stream(src)
                writer = writer or pa.ipc.new_stream(sink, reader.schema)
                for b in reader:
                    if left <= 0:
                        break
                    part = b.slice(0, min(left, b.num_rows))
                    writer.write_batch(part)
                    left -= part.num_rows
            if left <= 0:
                break
        if writer is not None:
            writer.close()
    state = _load_json(st.split_dir / "state.json")
    state["_data_files"] = [{"filename": out_file.name}]
    (dest / "state.json").write_text(json.dumps(state, indent=2))
    if (st.split_dir / "dataset_info.json").exists():
        shutil.copy(st.split_dir / "dataset_info.json", dest / "dataset_info.json")
    return k - left


def _write_sample_imagefolder(st: Stored, k: int, dest: pathlib.Path) -> int:
    dest.mkdir(parents=True)
    with open(dest / "metadata.jsonl", "w", encoding="utf-8") as meta:
        for i, (path, row) in enumerate(zip(st.images[:k], st.metadata[:k])):
            name = f"images/{i:06d}{path.suffix.lower()}"
            (dest / "images").mkdir(exist_ok=True)
            shutil.copy(path, dest / name)
            meta.write(json.dumps(dict(row, file_name=name)) + "\n")
    return min(k, len(st.images))


def measure_docfeed(st: Stored, k: int, batch: int, threads: int, budget: Budget,
                    notes: List[str], tmp: pathlib.Path) -> Optional[Dict[str, Any]]:
    """docfeed's time per batch on the same samples: pack/migrate them, `docfeed bench`."""
    h, w = st.image_size or DEFAULT_SIZE
    pack_s, packed_bytes, n = 0.0, 0, st.samples
    try:
        if st.kind == "docfeed":
            out = st.split_dir
            packed_bytes = st.bytes_on_disk
        else:
            src, out = tmp / "sample-src", tmp / "sample.docfeed"
            if st.kind == "save_to_disk":
                if st.tensor_column is None:
                    notes.append("docfeed path not measured: no pixel tensor column to migrate")
                    return None
                n = _write_sample_save_to_disk(st, k, src)
                args = ["pack", src, "-o", out, "--threads", str(threads)]
                if st.tensor_column != "pixel_values":
                    args += ["--pixel-column", st.tensor_column]
            else:
                n = _write_sample_imagefolder(st, k, src)
                args = ["pack", src, "-o", out, "--threads", str(threads), "--preprocess",
                        "donut", "--size", f"{h}x{w}"]
            t = time.perf_counter()
            _run_cli(args, budget.left() + 60)
            pack_s = time.perf_counter() - t
            packed_bytes = _dir_bytes(out)
        # About 12 batches (the first, cold one is not counted by bench).
        per_epoch = max(1, n // batch)
        epochs = 1 if st.kind == "docfeed" else max(1, min(50, math.ceil(12 / per_epoch)))
        args = ["bench", out, "--json", "--threads", str(threads), "--dtype", "uint8",
                "--batch-size", str(batch), "--size", f"{h}x{w}", "--epochs", str(epochs),
                "--max-batches", "12"]
        bench = json.loads(_run_cli(args, budget.left() + 60).stdout.strip().splitlines()[-1])
    except (DoctorError, subprocess.TimeoutExpired, FileNotFoundError, ValueError) as e:
        notes.append(f"docfeed path not measured: {e}")
        return None
    pages_s = bench.get("pages_per_s", 0.0)
    if pages_s <= 0:
        notes.append("docfeed path not measured: bench delivered no pages after the first batch")
        return None
    batch_s = batch / pages_s
    ms = bench.get("ms_per_page", {})
    stage_names = {"read": "read", "decode": "decode", "resize": "resize",
                   "decode_resize": "decode+resize", "pad_normalize": "pad"}
    raw = {stage_names[k2]: v * batch / 1000 / bench.get("threads", threads)
           for k2, v in ms.items() if k2 in stage_names and v > 0}
    total = sum(raw.values())
    raw = {k2: v for k2, v in raw.items() if v >= 0.01 * total}  # drop the negligible ones
    total = sum(raw.values())
    stages = ({k2: v * batch_s / total for k2, v in raw.items()} if total > 0
              else {"loader": batch_s})
    samples_in = n if st.kind != "docfeed" else st.samples
    return {"name": f"docfeed.Loader, {bench.get('threads', threads)} threads", "batch_s": batch_s,
            "stages": stages, "workers": bench.get("threads", threads), "kind": "docfeed",
            "pack_s_per_sample": pack_s / max(samples_in, 1) if pack_s else 0.0,
            "bytes_per_sample": packed_bytes / max(samples_in, 1), "bench": bench,
            "sample_rows": samples_in}


# ----------------------------------------------------------------------------------------------
# Part 3: the GPU and the verdict.


def gpu_step(args: argparse.Namespace, size: Tuple[int, int]) -> Dict[str, Any]:
    if args.step_time is not None:
        return {"step_s": args.step_time, "source": "step-time",
                "device": "the user's GPU (--step-time)"}
    flops = donut_base_train_flops(*size)
    peak = GPU_PEAK[args.gpu]
    step = flops["train"] * args.batch_size / (peak * args.mfu)
    return {"step_s": step, "source": "donut-base-flops",
            "device": f"{args.gpu.upper()} at {args.mfu:.0%} of its {peak / 1e12:.0f} TFLOP/s "
                      "dense bf16/fp16 peak (assumed)",
            "train_flops_per_sample": flops["train"], "forward_flops": flops,
            "peak_flops": peak, "mfu": args.mfu}


def finish_pipelines(pipes: List[Dict[str, Any]], st: Stored, disk_mb_s: float,
                     step: float, args: argparse.Namespace, ram_avail: int) -> None:
    """Adds the modelled disk time, gpu_busy, epoch_s and job_s to each measured pipeline.

    Disk: measurements read warm pages; when the dataset (at --assume-samples) does not fit in
    the page cache, every epoch reads it from disk, so a batch also costs its bytes at the
    measured cold rate: in series with the work at 0 workers (the training process reads), in
    parallel with it otherwise (workers/threads prefetch; then the slower of the two counts).
    GPU: input and compute overlap (prefetching), so a step takes max(step, batch_s)."""
    b = args.batch_size
    for p in pipes:
        bps = p.get("bytes_per_sample", st.bytes_per_sample)
        fits = bps * args.assume_samples < ram_avail
        p["page_cache_holds"] = fits
        disk = 0.0 if fits or disk_mb_s <= 0 else b * bps / (disk_mb_s * 1e6)
        cpu = p["batch_s"]
        if p["workers"] == 0:
            p["batch_s"] = cpu + disk
            if disk:
                p["stages"] = {"disk read": disk, **p["stages"]}
        elif disk > cpu:
            p["batch_s"] = disk
            p["stages"] = {"disk read": disk}
        p["gpu_busy"] = step / max(step, p["batch_s"])
        p["epoch_s"] = math.ceil(args.assume_samples / b) * max(step, p["batch_s"])
        p["job_s"] = args.epochs * p["epoch_s"]


def fix_text(pipes: List[Dict[str, Any]], st: Stored, args: argparse.Namespace,
             step: float) -> str:
    user = [p for p in pipes if p["kind"] == "user"]
    doc = [p for p in pipes if p["kind"] == "docfeed"]
    if not doc:
        return "docfeed's path could not be measured here (see the notes)."
    d = doc[0]
    if not user:
        return (f"already docfeed: {d['name']} gives a batch in {human_seconds(d['batch_s'])}, "
                f"GPU busy {d['gpu_busy']:.0%}; job {human_seconds(d['job_s'])}.")
    base = user[0]
    how = (f"migrate once with `docfeed pack {st.path} -o OUT`" if st.kind == "save_to_disk"
           else f"pack once with `docfeed pack {st.path} -o OUT --preprocess donut --size "
                f"{(st.image_size or DEFAULT_SIZE)[0]}x{(st.image_size or DEFAULT_SIZE)[1]}`")
    one_time = d.get("pack_s_per_sample", 0) * args.assume_samples
    text = (f"{how}"
            + (f" (at most ~{human_seconds(one_time)} for {args.assume_samples:,} samples at "
               f"the rate of this machine's {d.get('sample_rows', 0)}-sample run, start-up "
               f"included; {human_bytes(d['bytes_per_sample'] * args.assume_samples)} instead of "
               f"{human_bytes(st.bytes_per_sample * args.assume_samples)})" if one_time else "")
            + f" and train with docfeed.Loader / docfeed.hf.Seq2SeqTrainer: "
            f"{args.epochs} epoch(s) in {human_seconds(d['job_s'])} instead of "
            f"{human_seconds(base['job_s'])} ({base['job_s'] / d['job_s']:.1f}x faster, GPU busy "
            f"{d['gpu_busy']:.0%} instead of {base['gpu_busy']:.1%}).")
    workers = [p for p in user if p["workers"] > 0]
    if workers:
        w = workers[0]
        n = w["workers"]
        # Perfect scaling: n workers each build a batch in the 0-worker time.
        ideal = base["batch_s"] / n
        ideal_busy = min(1.0, step / ideal) if ideal > 0 else 1.0
        gain = base["job_s"] / w["job_s"]
        text += (f" dataloader_num_workers={n} alone gives {human_seconds(w['job_s'])} here "
                 f"({gain:.1f}x, GPU busy {w['gpu_busy']:.1%}"
                 + ("; no gain on this machine, whose cores the workers share with the training "
                    "process and other load" if gain < 1.05 else "")
                 + f"); perfect scaling over {n} workers would give a GPU busy {ideal_busy:.1%}"
                 + (": workers divide the cost of the Python objects between processes (and "
                    "multiply the RAM they hold) but do not remove it." if ideal_busy < 0.9 else
                    f", if {n} cores are free for them besides the training process."))
    return text


# ----------------------------------------------------------------------------------------------
# Output.


def render_text(r: Dict[str, Any], st: Stored) -> str:
    lines = [f"docfeed doctor: {r['path']} ({r['kind']}"
             + (f", split {st.split} of {', '.join(st.splits)}" if st.split else "") + ")", ""]
    lines.append("1. What is stored")
    lines.append(f"   samples {r['samples']:,}, {human_bytes(r['bytes_on_disk'])} on disk, "
                 f"{human_bytes(r['bytes_per_sample'])} per sample"
                 + (f", image {r['image_size'][0]}x{r['image_size'][1]}" if r["image_size"]
                    else ""))
    for name, kind in st.columns:
        lines.append(f"   column {name}: {kind}")
    lines.append(f"   RAM {human_bytes(r['ram_bytes'])} ({human_bytes(r['ram_available_bytes'])} "
                 f"available): the page cache {'will' if r['page_cache_holds'] else 'will NOT'} "
                 f"hold {human_bytes(r['projected_bytes'])} "
                 f"({r['assume_samples']:,} samples like these)")
    for p in r["pathologies"] or [{"id": "none", "message": "no known pathology found"}]:
        lines.append(f"   [{p['id']}] {p['message']}")
    lines += ["", "2. Measured on a sample of this data"]
    d = r["disk"]
    warm_note = (" (likely served from the page cache: a warm figure)" if d["likely_warm"]
                 else " (page cache dropped with posix_fadvise first)")
    lines.append(f"   disk read {r['disk_read_mb_s']:.0f} MB/s sequential{warm_note}; "
                 f"warm re-read {d['warm_mb_s']:.0f} MB/s")
    for p in r["pipelines"]:
        stages = ", ".join(f"{k} {human_seconds(v)}" for k, v in p["stages"].items())
        lines.append(f"   {p['name']:<44} {human_seconds(p['batch_s']):>9} per batch of "
                     f"{r['batch_size']}  ({stages})")
    for note in r["notes"]:
        lines.append(f"   note: {note}")
    g = r["gpu"]
    lines += ["", "3. GPU appetite"]
    if g["source"] == "donut-base-flops":
        lines.append(f"   Donut-base training: {g['train_flops_per_sample'] / 1e12:.2f} TFLOP per "
                     f"sample at {r['image_size'][0]}x{r['image_size'][1]} (forward: encoder "
                     f"{g['forward_flops']['encoder_forward'] / 1e12:.2f}, decoder "
                     f"{g['forward_flops']['decoder_forward'] / 1e12:.2f}); {g['device']}")
    lines.append(f"   GPU step: {human_seconds(g['step_s'])} per batch of {r['batch_size']} "
                 f"({g['source']}); input and compute assumed to overlap (prefetching)")
    lines.append(f"   {'pipeline':<44} {'batch':>9} {'GPU busy':>9} {'epoch':>9} "
                 f"{'job (' + str(r['epochs']) + ' ep)':>11}")
    for p in r["pipelines"]:
        lines.append(f"   {p['name']:<44} {human_seconds(p['batch_s']):>9} "
                     f"{p['gpu_busy']:>9.1%} {human_seconds(p['epoch_s']):>9} "
                     f"{human_seconds(p['job_s']):>11}")
    lines += ["", f"Fix: {r['fix']}", f"(doctor took {r['elapsed_s']:.1f} s)"]
    return "\n".join(lines) + "\n"


def render_markdown(r: Dict[str, Any], st: Stored, chart: Optional[str]) -> str:
    md = [f"# docfeed doctor: `{r['path']}`", "", f"Kind: {r['kind']}"
          + (f" (split `{st.split}` of {', '.join(st.splits)})" if st.split else "") + ".", "",
          "## What is stored", "",
          f"{r['samples']:,} samples, {human_bytes(r['bytes_on_disk'])} on disk, "
          f"{human_bytes(r['bytes_per_sample'])} per sample. RAM {human_bytes(r['ram_bytes'])}: "
          f"the page cache {'will' if r['page_cache_holds'] else 'will not'} hold "
          f"{human_bytes(r['projected_bytes'])} ({r['assume_samples']:,} samples).", "",
          "| column | type |", "|---|---|"]
    md += [f"| `{n}` | {k} |" for n, k in st.columns]
    md += ["", "Pathologies:", ""]
    md += [f"* **{p['id']}**: {p['message']}" for p in r["pathologies"]] or ["* none found"]
    md += ["", "## Measured (a sample of this data)", "",
           f"Disk read: {r['disk_read_mb_s']:.0f} MB/s sequential"
           + (" (likely a warm-cache figure)" if r["disk"]["likely_warm"] else " (cold)") + ".", "",
           f"| pipeline | s per batch of {r['batch_size']} | stages (s) | GPU busy | epoch | "
           f"job ({r['epochs']} epochs) |", "|---|---:|---|---:|---:|---:|"]
    for p in r["pipelines"]:
        stages = ", ".join(f"{k} {v:.3g}" for k, v in p["stages"].items())
        md.append(f"| {p['name']} | {p['batch_s']:.3g} | {stages} | {p['gpu_busy']:.1%} | "
                  f"{human_seconds(p['epoch_s'])} | {human_seconds(p['job_s'])} |")
    g = r["gpu"]
    md += ["", "## GPU", "", f"Step {g['step_s']:.3g} s per batch ({g['source']}; {g['device']})."
           + (f" Donut-base: {g['train_flops_per_sample'] / 1e12:.2f} TFLOP per training sample."
              if g["source"] == "donut-base-flops" else ""), "",
           "Assumption: input and compute overlap, so a step takes max(GPU step, batch time).", ""]
    md += [f"* note: {n}" for n in r["notes"]]
    md += ["", "## Fix", "", r["fix"], ""]
    if chart:
        md += [f"![time per batch by stage]({chart})", ""]
    else:
        md += ["(chart skipped: matplotlib is not importable)", ""]
    return "\n".join(md)


def write_chart(r: Dict[str, Any], path: pathlib.Path) -> bool:
    """Time per batch by stage for each pipeline against the GPU step (log scale). False when
    matplotlib is not importable."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    pipes = r["pipelines"]
    step = r["gpu"]["step_s"]
    fig, ax = plt.subplots(figsize=(10, 1.4 + 0.7 * max(len(pipes), 1)))
    colours: Dict[str, Any] = {}
    palette = plt.get_cmap("tab10").colors
    # Log scale (the pipelines differ by orders of magnitude): a bar spans [xmin, batch_s] and
    # its stages split that span in proportion to their share of the batch time.
    xmin = min([step] + [p["batch_s"] for p in pipes]) / 4
    for y, p in enumerate(pipes):
        total = sum(p["stages"].values()) or 1.0
        done = 0.0
        for stage, v in p["stages"].items():
            c = colours.setdefault(stage, palette[len(colours) % len(palette)])
            x0 = xmin * (p["batch_s"] / xmin) ** (done / total)
            done += v
            x1 = xmin * (p["batch_s"] / xmin) ** (done / total)
            ax.barh(y, x1 - x0, left=x0, color=c,
                    label=stage if stage not in ax.get_legend_handles_labels()[1] else None)
        ax.text(p["batch_s"] * 1.08, y, human_seconds(p["batch_s"]), va="center", fontsize=8)
    ax.set_xlim(xmin, max([step] + [p["batch_s"] for p in pipes]) * 3)
    ax.axvline(step, color="black", linestyle="--", label=f"GPU step {human_seconds(step)}")
    ax.set_yticks(range(len(pipes)))
    ax.set_yticklabels([p["name"] for p in pipes], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(f"seconds per batch of {r['batch_size']} (log scale)")
    ax.set_title("docfeed doctor: time per batch (stages: share of each bar) vs the GPU's step",
                 fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ----------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="docfeed doctor", description=(
        "Where is the input bottleneck of a Donut training job, and does "
        "dataloader_num_workers fix it? Measured on a sample of PATH."))
    ap.add_argument("path", help="a save_to_disk Dataset/DatasetDict, an image folder or a "
                    "docfeed dataset")
    ap.add_argument("--batch-size", type=int, default=8, help="samples per step (default 8)")
    ap.add_argument("--workers", type=int, default=min(os.cpu_count() or 1, 8),
                    help="N for the DataLoader and docfeed's threads (default min(cores, 8))")
    ap.add_argument("--samples", type=int, default=0,
                    help="rows measured (default batch-size x max(2, workers))")
    ap.add_argument("--max-seconds", type=float, default=60.0,
                    help="time box of the measurements (default 60)")
    gpu = ap.add_mutually_exclusive_group()
    gpu.add_argument("--step-time", type=float, default=None,
                     help="the GPU's measured seconds per training step of batch-size samples")
    gpu.add_argument("--gpu", choices=sorted(GPU_PEAK), default="h100",
                     help="GPU whose dense bf16 peak x --mfu gives the step (default h100)")
    ap.add_argument("--mfu", type=float, default=DEFAULT_MFU,
                    help="sustained fraction of the GPU's peak assumed (default 0.35)")
    ap.add_argument("--epochs", type=int, default=1, help="epochs of the job (default 1)")
    ap.add_argument("--assume-samples", type=int, default=0,
                    help="epoch/job estimate for N samples like these (default: the dataset's)")
    ap.add_argument("--size", default=None, help="HxW for an image folder (default 1553x1200)")
    ap.add_argument("--report", default=None, help="write report.md and doctor.png into DIR")
    ap.add_argument("--json", default=None, help="write the findings as JSON to FILE")
    args = ap.parse_args(list(argv))
    for name in ("batch_size", "workers", "epochs"):
        if getattr(args, name) < (0 if name == "workers" else 1):
            ap.error(f"--{name.replace('_', '-')} must be positive")
    if args.step_time is not None and args.step_time <= 0:
        ap.error("--step-time must be positive")
    if not 0 < args.mfu <= 1:
        ap.error("--mfu must be in (0, 1]")
    return args


def run(args: argparse.Namespace) -> Tuple[Dict[str, Any], Stored]:
    budget = Budget(args.max_seconds)
    path = pathlib.Path(args.path)
    kind = detect_kind(path)
    st = Stored(path, kind)
    size = DEFAULT_SIZE
    if args.size:
        try:
            size = tuple(int(v) for v in args.size.lower().split("x"))  # type: ignore[assignment]
            assert len(size) == 2 and min(size) > 0
        except (ValueError, AssertionError):
            raise DoctorError(f"--size must look like 1553x1200, not {args.size!r}") from None
    if kind == "save_to_disk":
        inspect_save_to_disk(st, 16, budget)
    elif kind == "imagefolder":
        inspect_imagefolder(st, size)
        if not st.samples:
            raise DoctorError(f"{path}: an image folder without images")
    else:
        inspect_docfeed(st)
    if not st.samples:
        raise DoctorError(f"{path}: the dataset has no samples")
    args.assume_samples = args.assume_samples or st.samples
    workers = max(1, args.workers)
    k = min(st.samples, args.samples or args.batch_size * max(2, workers))
    total_ram, avail_ram = ram_bytes()
    notes: List[str] = []
    disk = measure_disk(st.data_files, budget.share(0.08, floor=0.5)) if st.data_files else {
        "cold_mb_s": 0.0, "warm_mb_s": 0.0, "bytes": 0, "dropped": False, "likely_warm": True}
    pipes: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="docfeed-doctor-") as tmp:
        # docfeed first: it is quick, and copying the sample warms the rows the user's path
        # then reads (the disk is modelled separately, see finish_pipelines).
        big = st.bytes_per_sample > (4 << 20)
        d = measure_docfeed(st, min(k, args.batch_size) if big else k, args.batch_size, workers,
                            budget, notes, pathlib.Path(tmp))
        if kind == "save_to_disk":
            pipes += measure_user_save_to_disk(st, k, args.batch_size, workers, budget, notes)
        elif kind == "imagefolder":
            pipes += measure_user_imagefolder(st, k, args.batch_size, workers, budget, notes)
        if d is not None:
            pipes.append(d)
        scaled = [p for p in pipes if p.get("measured_batch_size", args.batch_size)
                  < args.batch_size]
        if scaled:
            notes.append("time box: " + "; ".join(
                f"{p['name']} measured on batches of {p['measured_batch_size']}, scaled to "
                f"{args.batch_size}" for p in scaled) + " (costs are linear in the samples; "
                "raise --max-seconds for whole batches)")
    image_size = st.image_size or (size if kind != "save_to_disk" else None)
    gpu = gpu_step(args, image_size or DEFAULT_SIZE)
    if gpu["source"] == "donut-base-flops" and image_size is None:
        notes.append(f"image size unknown: GPU cost computed at {DEFAULT_SIZE[0]}x"
                     f"{DEFAULT_SIZE[1]}")
    finish_pipelines(pipes, st, disk["cold_mb_s"], gpu["step_s"], args, avail_ram or total_ram)
    projected = st.bytes_per_sample * args.assume_samples
    report = {
        "path": str(path), "kind": kind, "split": st.split, "splits": st.splits,
        "samples": st.samples, "bytes_on_disk": st.bytes_on_disk,
        "bytes_per_sample": st.bytes_per_sample, "ram_bytes": total_ram,
        "ram_available_bytes": avail_ram, "projected_bytes": projected,
        "page_cache_holds": projected < (avail_ram or total_ram),
        "image_size": list(image_size) if image_size else None,
        "columns": [{"name": n, "type": t} for n, t in st.columns],
        "pathologies": st.pathologies, "disk_read_mb_s": disk["cold_mb_s"], "disk": disk,
        "gpu": gpu, "batch_size": args.batch_size, "epochs": args.epochs,
        "assume_samples": args.assume_samples, "workers": workers, "sample_rows": k,
        "pipelines": pipes, "fix": fix_text(pipes, st, args, gpu["step_s"]),
        "notes": notes + st.notes,
    }
    report["elapsed_s"] = time.monotonic() - budget.start
    return report, st


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        report, st = run(args)
    except DoctorError as e:
        print(f"docfeed doctor: {e}", file=sys.stderr)
        return 1
    print(render_text(report, st), end="")
    if args.report:
        out = pathlib.Path(args.report)
        out.mkdir(parents=True, exist_ok=True)
        chart = "doctor.png" if write_chart(report, out / "doctor.png") else None
        (out / "report.md").write_text(render_markdown(report, st, chart), encoding="utf-8")
        print(f"report: {out / 'report.md'}" + (f", chart {out / chart}" if chart else
                                                 " (chart skipped: matplotlib not importable)"))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n",
                                           encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

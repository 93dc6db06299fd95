"""Part 1 of `docfeed doctor`: what is stored, read with pyarrow only (no `datasets` needed).

`detect_kind` names the layout (save_to_disk, docfeed, imagefolder, parquet, webdataset);
`inspect` returns a
`Stored`: the facts the report prints (samples, bytes, columns, image size, pathologies) and, in
`Stored.source`, where the measurements read the data from. Nothing here writes anything.

A URL (s3://, http(s)://) is a docfeed dataset read where it is, through docfeed's own remote
reads (the manifest by `docfeed.dataset_info`, a dataset dict's dataset_dict.json by
`read_file`); the other layouts are local only."""
from __future__ import annotations

import json
import pathlib
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from docfeed.doctor.common import (DOCUMENT_SUFFIXES, HUGE_ROW_BYTES, IMAGE_SUFFIXES, PDF_DPI,
                                   Budget, DoctorError, dir_bytes, human_bytes, is_url,
                                   load_json)

# Normalizations Donut datasets are made with: (mean, std) per channel.
NORMALIZATIONS = {"donut (0.5/0.5)": ((0.5,) * 3, (0.5,) * 3),
                  "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))}
PADDING_ROWS = 16  # rows sampled (spread over the split) for the frozen-padding check


@dataclass(frozen=True)
class Column:
    name: str
    type: str

    def to_json(self) -> Dict[str, str]:
        return {"name": self.name, "type": self.type}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Column":
        return cls(d["name"], d["type"])


@dataclass(frozen=True)
class Pathology:
    """A named problem of the stored data: a stable id (float32-nested-lists, float-tensors,
    raw-pixels, frozen-padding, no-format, huge-rows), the message with its cost, and the
    figures behind it (JSON values, written next to id and message)."""

    id: str
    message: str
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> Dict[str, Any]:
        return {"id": self.id, "message": self.message, **self.detail}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Pathology":
        return cls(d["id"], d["message"],
                   {k: v for k, v in d.items() if k not in ("id", "message")})


@dataclass(frozen=True)
class Padding:
    """Border rows/columns of one tensor that are exactly the normalization's value of uint8 0."""

    normalization: str
    top: int
    bottom: int
    left: int
    right: int
    centred: bool


@dataclass(frozen=True)
class StoredSource:
    """Where the measurements read the examined split: its directory and data files, and per
    kind the pixel tensor column (save_to_disk) or the images with their metadata rows
    (imagefolder, in sample order)."""

    split_dir: "pathlib.Path | str"  # a str for a URL (a docfeed dataset read remotely)
    data_files: Tuple[pathlib.Path, ...] = ()  # local files only
    tensor_column: Optional[str] = None
    # save_to_disk without a tensor column: its datasets Image column (encoded image files),
    # which `docfeed pack` packs as it is.
    image_column: Optional[str] = None
    tensor_dtype: Optional[str] = None
    format_type: Optional[str] = None
    images: Tuple[pathlib.Path, ...] = ()
    metadata: Tuple[Mapping[str, Any], ...] = ()
    # Per image file of an image folder: 1 for an image, a PDF's page count (0: unknown).
    pages: Tuple[int, ...] = ()


@dataclass(frozen=True)
class Stored:
    """Part 1's findings on PATH (the examined split of a dataset dict)."""

    path: "pathlib.Path | str"  # a str for a URL
    kind: str
    samples: int
    bytes_on_disk: int  # at a URL: the bytes of every file the manifest lists
    source: StoredSource
    split: Optional[str] = None
    splits: Tuple[str, ...] = ()
    columns: Tuple[Column, ...] = ()
    image_size: Optional[Tuple[int, int]] = None
    pathologies: Tuple[Pathology, ...] = ()
    notes: Tuple[str, ...] = ()

    @property
    def bytes_per_sample(self) -> float:
        return self.bytes_on_disk / self.samples if self.samples else 0.0


# ----------------------------------------------------------------------------------------------
# The layout.


def _is_parquet(p: pathlib.Path) -> bool:
    try:
        with open(p, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def _is_tar(p: pathlib.Path) -> bool:
    import tarfile

    try:
        return p.is_file() and tarfile.is_tarfile(str(p))
    except OSError:
        return False


def _files(root: pathlib.Path, depth: int = 4) -> List[pathlib.Path]:
    """Files under root, up to `depth` directories deep, hidden ones skipped, in name order."""
    out: List[pathlib.Path] = []
    for p in sorted(root.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_dir():
            if depth > 0:
                out += _files(p, depth - 1)
        elif p.is_file():
            out.append(p)
    return out


def detect_kind(path: "pathlib.Path | str") -> str:
    """save_to_disk, docfeed, imagefolder, parquet or webdataset (as `docfeed pack` detects
    them, from the files' bytes); DoctorError naming `path` otherwise. A URL must be a docfeed
    dataset (or a dict of them): "docfeed" at once, and `inspect` reads it (DoctorError when it
    is none)."""
    if is_url(path):
        return "docfeed"
    if not path.exists():
        raise DoctorError(f"{path}: no such file or directory")
    if not path.is_dir():
        if _is_parquet(path):
            return "parquet"
        if _is_tar(path):
            return "webdataset"
        raise DoctorError(f"{path}: not a Parquet file or a tar shard (doctor takes a "
                          "save_to_disk directory, an image folder, a docfeed dataset, Parquet or "
                          "WebDataset shards)")
    split = path
    if (path / "dataset_dict.json").exists():
        splits = load_json(path / "dataset_dict.json").get("splits") or []
        if not splits:
            raise DoctorError(f"{path / 'dataset_dict.json'}: no splits listed")
        split = path / ("train" if "train" in splits else splits[0])
    if (split / "docfeed.json").exists():
        return "docfeed"
    if (split / "state.json").exists():
        return "save_to_disk"
    if (path / "metadata.jsonl").exists() or any(
            p.suffix.lower() in IMAGE_SUFFIXES | DOCUMENT_SUFFIXES
            for p in path.rglob("*") if p.is_file()):
        return "imagefolder"
    files = _files(path)
    if any(_is_parquet(p) for p in files):
        return "parquet"
    if files and all(_is_tar(p) for p in files):
        return "webdataset"
    raise DoctorError(f"{path}: not a dataset doctor knows: no state.json or dataset_dict.json "
                      "(datasets save_to_disk), no docfeed.json (docfeed), no images or "
                      "metadata.jsonl (image folder), no Parquet files, no tar shards")


def choose_split(path: pathlib.Path) -> Tuple[pathlib.Path, List[str], Optional[str]]:
    """(directory of the examined split, all split names, its name) of a dataset or dict."""
    if (path / "dataset_dict.json").exists():
        splits = list(load_json(path / "dataset_dict.json").get("splits") or [])
        name = "train" if "train" in splits else splits[0]
        return path / name, splits, name
    return path, [], None


# ----------------------------------------------------------------------------------------------
# Tensors stored as nested lists or ArrayND.


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


def _tensor_field(schema: Any, features: Mapping[str, Any]) -> Optional[str]:
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


def padding_of(t: Any) -> Optional[Padding]:
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
    return Padding(name, top, bottom, left, right, centred)


@dataclass(frozen=True)
class _TensorFindings:
    image_size: Optional[Tuple[int, int]]
    dtype: Optional[str]
    pathologies: Tuple[Pathology, ...]


def _check_tensors(data_files: Tuple[pathlib.Path, ...], name: str, samples: int,
                   feature: Any, format_type: Optional[str], padding_rows: int,
                   budget: Budget) -> _TensorFindings:
    """Type pathologies of the tensor column `name`, the image size and the padding of sampled
    rows."""
    import pyarrow as pa

    is_array = isinstance(feature, dict) and str(feature.get("_type", "")).startswith("Array")
    sampled, padded, centred = 0, 0, 0
    m = min(padding_rows, samples)  # rows spread evenly over the split
    wanted = set(int(i * max(samples - 1, 0) / max(m - 1, 1)) for i in range(m))
    deadline = time.monotonic() + budget.share(0.15, floor=1.0)
    first, row0 = None, 0
    for f in data_files:
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
                            centred += p.centred
                row0 += batch.num_rows
    if first is None:
        return _TensorFindings(None, None, ())
    found: List[Pathology] = []
    c, h, w = first.shape
    values = c * h * w
    if first.dtype.kind == "f":
        if is_array:
            found.append(Pathology(
                "float-tensors", f"{name} holds normalized {first.dtype} tensors "
                f"({feature.get('_type')}, {c}x{h}x{w}): "
                f"{human_bytes(values * first.dtype.itemsize)} per sample, "
                "4x a uint8 page and 10-100x a compressed one", {"dtype": str(first.dtype)}))
        else:
            pid = "float32-nested-lists" if first.dtype.name == "float32" else "float-nested-lists"
            found.append(Pathology(
                pid, f"{name} stores normalized {first.dtype} pixels as nested lists "
                f"({c}x{h}x{w}): {values:,} numbers per sample that datasets turns into "
                f"Python floats ({values * 8:,} per batch of 8 through the collator), "
                f"{human_bytes(values * first.dtype.itemsize)} on disk per sample",
                {"dtype": str(first.dtype), "floats_per_sample": values}))
    else:
        found.append(Pathology(
            "raw-pixels", f"{name} stores raw {first.dtype} pixels ({c}x{h}x{w}, "
            f"{human_bytes(values * first.dtype.itemsize)} per sample) instead of an "
            "encoded image", {"dtype": str(first.dtype)}))
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
        found.append(Pathology("frozen-padding", msg, {
            "sampled": sampled, "padded": padded, "centred": centred, "off_centre": off}))
    if format_type is None:  # ArrayND columns come back as nested lists too
        found.append(Pathology(
            "no-format", "no format set (state.json _format_type null): each row comes back "
            "as Python lists; ds.with_format('torch') would skip the Python objects but still "
            "read and copy every float", {"format": None}))
    return _TensorFindings((int(h), int(w)), str(first.dtype), tuple(found))


# ----------------------------------------------------------------------------------------------
# Each kind.


def inspect_save_to_disk(path: pathlib.Path, budget: Budget,
                         padding_rows: int = PADDING_ROWS) -> Stored:
    import pyarrow as pa

    split_dir, splits, split = choose_split(path)
    state = load_json(split_dir / "state.json")
    files = state.get("_data_files")
    if not isinstance(files, list) or not files:
        raise DoctorError(f"{split_dir / 'state.json'}: field _data_files missing or empty")
    data_files = tuple(split_dir / f["filename"] for f in files)
    format_type = state.get("_format_type")
    info_path = split_dir / "dataset_info.json"
    features = load_json(info_path).get("features") or {} if info_path.exists() else {}
    schema, rows, bytes_on_disk = None, 0, 0
    for f in data_files:
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
        bytes_on_disk += f.stat().st_size
    if not features and schema.metadata and b"huggingface" in schema.metadata:
        features = json.loads(schema.metadata[b"huggingface"]).get("info", {}).get("features", {})
    columns = []
    for fld in schema:
        feat = features.get(fld.name)
        columns.append(Column(fld.name, _feature_type(feat) if feat is not None else str(fld.type)))
    tensor_column = _tensor_field(schema, features)
    notes: Tuple[str, ...] = ()
    tensors = _TensorFindings(None, None, ())
    image_column = None
    if tensor_column is None and isinstance(features.get("image"), dict) and \
            features["image"].get("_type") == "Image":
        image_column = "image"
        notes = ("images stored as encoded files in the Image column 'image': `docfeed pack` "
                 "keeps their bytes (or stores the Donut preset's resized pages with "
                 "--preprocess donut)",)
    elif tensor_column is None:
        notes = ("no pixel tensor column (3-level lists or ArrayND): the float32 migration does "
                 "not apply",)
    else:
        tensors = _check_tensors(data_files, tensor_column, rows, features.get(tensor_column, {}),
                                 format_type, padding_rows, budget)
    pathologies = list(tensors.pathologies)
    bps = bytes_on_disk / rows if rows else 0.0
    if bps > HUGE_ROW_BYTES:
        pathologies.append(Pathology(
            "huge-rows", f"{human_bytes(bps)} per sample: a batch of 8 is "
            f"{human_bytes(8 * bps)} to read and convert per step; the same page as uint8 is "
            f"{human_bytes(bps / 4) if tensors.dtype == 'float32' else 'a fraction'}, "
            "as a compressed image 0.05-0.5 MB", {"bytes_per_sample": bps}))
    source = StoredSource(split_dir=split_dir, data_files=data_files, tensor_column=tensor_column,
                          tensor_dtype=tensors.dtype, format_type=format_type,
                          image_column=image_column)
    return Stored(path=path, kind="save_to_disk", samples=rows, bytes_on_disk=bytes_on_disk,
                  source=source, split=split, splits=tuple(splits), columns=tuple(columns),
                  image_size=tensors.image_size, pathologies=tuple(pathologies), notes=notes)


PDFINFO_DOCUMENTS = 500  # documents whose pages are counted; the rest are estimated from them


def pdf_page_count(pdf: pathlib.Path) -> int:
    """The page count pdfinfo (poppler-utils, the tool docfeed's PDF tests compare with) gives,
    or 0 when it is not installed or cannot read the file."""
    import shutil
    import subprocess

    tool = shutil.which("pdfinfo")
    if tool is None:
        return 0
    proc = subprocess.run([tool, str(pdf)], capture_output=True, text=True, timeout=60)
    for line in proc.stdout.splitlines():
        if line.startswith("Pages:"):
            return int(line.split()[1])
    return 0


def inspect_imagefolder(path: pathlib.Path, size: Tuple[int, int]) -> Stored:
    meta_path = path / "metadata.jsonl"
    images: List[pathlib.Path] = []
    metadata: List[Dict[str, Any]] = []
    columns = [Column("image", "encoded image file")]
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
                if not (path / name).is_file():
                    raise DoctorError(f"{meta_path}: line {n}: {path / name} does not exist")
                images.append(path / name)
                metadata.append(row)
        columns += [Column(key, type(value).__name__)
                    for key, value in (metadata[0].items() if metadata else [])]
    else:
        images = sorted(p for p in path.rglob("*")
                        if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES | DOCUMENT_SUFFIXES)
        metadata = [{"file_name": str(p.relative_to(path))} for p in images]
    bytes_on_disk = sum(p.stat().st_size for p in images)
    # PDF documents are one sample per page (docfeed pack's default).
    pages, notes = [], []
    counted = 0
    for p in images:
        if p.suffix.lower() in DOCUMENT_SUFFIXES:
            counted += 1
            pages.append(pdf_page_count(p) if counted <= PDFINFO_DOCUMENTS else 0)
        else:
            pages.append(1)
    samples = len(images)
    if counted:
        known = [n for p, n in zip(images, pages) if p.suffix.lower() in DOCUMENT_SUFFIXES and n]
        if not known:
            notes.append(f"{counted} PDF documents, pages not counted (pdfinfo, from "
                         "poppler-utils, is not installed): each counted as one sample")
        else:
            per_doc = sum(known) / len(known)
            unknown = counted - len(known)
            samples = len(images) - counted + sum(known) + round(unknown * per_doc)
            notes.append(f"{counted} PDF documents, {sum(known)} pages in the {len(known)} "
                         "counted" + (f" (the other {unknown} estimated at {per_doc:.1f} pages "
                                      "each)" if unknown else "")
                         + f": one sample per page, rendered at {PDF_DPI} dpi")
    pathologies = []
    bps = bytes_on_disk / samples if samples else 0.0
    if images and bps > HUGE_ROW_BYTES:
        pathologies.append(Pathology(
            "huge-rows", f"{human_bytes(bps)} per image file: decoding large scans dominates; "
            "packing with --preprocess donut stores the resized page"))
    source = StoredSource(split_dir=path, data_files=tuple(images), images=tuple(images),
                          metadata=tuple(metadata), pages=tuple(pages))
    return Stored(path=path, kind="imagefolder", samples=samples, bytes_on_disk=bytes_on_disk,
                  source=source, columns=tuple(columns), image_size=size,
                  pathologies=tuple(pathologies), notes=tuple(notes))


def _remote_error(url: str, e: Exception) -> DoctorError:
    return DoctorError(f"{url}: doctor reads a docfeed dataset (or a dict of them) at a URL, and "
                       f"this is none: {e}. For another layout there, run doctor on a local copy")


def remote_split(url: str) -> Tuple[str, List[str], Optional[str], Dict[str, Any]]:
    """(URL of the examined split, all split names, its name, docfeed.dataset_info of it) of a
    docfeed dataset or dataset dict at `url`; DoctorError naming the URL when it is neither."""
    from docfeed import Error, NotFoundError, _docfeed

    base = url.rstrip("/")
    try:
        return base, [], None, _docfeed.dataset_info(base)
    except Error as first:
        if not isinstance(first, NotFoundError):  # access denied, unreachable, damaged, ...
            raise DoctorError(f"{url}: {first}") from None
        try:
            splits = list(json.loads(_docfeed.read_file(base + "/dataset_dict.json"))
                          .get("splits") or [])
        except (Error, ValueError, AttributeError):
            raise _remote_error(url, first) from None
    if not splits:
        raise DoctorError(f"{base}/dataset_dict.json: no splits listed")
    name = "train" if "train" in splits else str(splits[0])
    try:
        return f"{base}/{name}", splits, name, _docfeed.dataset_info(f"{base}/{name}")
    except Error as e:
        raise _remote_error(f"{base}/{name}", e) from None


def inspect_remote_docfeed(url: str) -> Stored:
    split_url, splits, split, info = remote_split(url)
    pre = info.get("preprocess") or {}
    columns = [Column("image", f"image ({info.get('codec')})")]
    columns += [Column(name, type_) for name, type_ in info.get("columns", [])]
    image_size = (int(pre["height"]), int(pre["width"])) if pre.get("height") else None
    return Stored(path=url, kind="docfeed", samples=int(info.get("num_samples", 0)),
                  bytes_on_disk=int(info.get("total_bytes", 0)),
                  source=StoredSource(split_dir=split_url), split=split, splits=tuple(splits),
                  columns=tuple(columns), image_size=image_size,
                  notes=("read over the network where it is: the loader's time includes "
                         "fetching the samples' byte ranges",))


def inspect_docfeed(path: "pathlib.Path | str") -> Stored:
    if is_url(path):
        return inspect_remote_docfeed(str(path))
    split_dir, splits, split = choose_split(path)
    manifest = load_json(split_dir / "docfeed.json")
    columns = [Column(manifest.get("image_column", "image"), f"image ({manifest.get('codec')})")]
    columns += [Column(c["name"], c["type"]) for c in manifest.get("columns", [])]
    pre = manifest.get("preprocess") or {}
    image_size = (int(pre["height"]), int(pre["width"])) if pre.get("preset") else None
    files = [split_dir / f["name"] if isinstance(f, dict) else split_dir / f
             for f in manifest.get("data_files", [])]
    source = StoredSource(split_dir=split_dir, data_files=tuple(f for f in files if f.is_file()))
    return Stored(path=path, kind="docfeed", samples=int(manifest.get("num_samples", 0)),
                  bytes_on_disk=dir_bytes(split_dir), source=source, split=split,
                  splits=tuple(splits), columns=tuple(columns), image_size=image_size)


# The Hub's split names, as `docfeed pack` (src/pack/parquet_source.h) and datasets resolve them.
_SPLIT_KEYWORDS = {"train": "train", "training": "train", "validation": "validation",
                   "valid": "validation", "val": "validation", "dev": "validation",
                   "test": "test", "testing": "test", "eval": "test", "evaluation": "test"}


def parquet_split_of(relative: pathlib.Path) -> str:
    """The split of a Parquet file at `relative` (to the folder) in the Hub's layouts."""
    import re

    m = re.match(r"^(.+)-\d{5}-of-\d{5}", relative.name)
    if m:
        return m.group(1)
    for part in reversed(relative.parts[:-1]):
        if part.lower() in _SPLIT_KEYWORDS:
            return _SPLIT_KEYWORDS[part.lower()]
    stem = re.split(r"[-._ ]", relative.name, maxsplit=1)[0].lower()
    return _SPLIT_KEYWORDS.get(stem, "train")


def _split_order(name: str) -> Tuple[int, str]:
    return ({"train": 0, "validation": 1, "test": 2}.get(name, 3), name)


def inspect_parquet(path: pathlib.Path) -> Stored:
    import pyarrow.parquet as pq

    if path.is_dir():
        by_split: Dict[str, List[pathlib.Path]] = {}
        for f in _files(path):
            if _is_parquet(f):
                by_split.setdefault(parquet_split_of(f.relative_to(path)), []).append(f)
        splits = sorted(by_split, key=_split_order)
        split: Optional[str] = "train" if "train" in by_split else splits[0]
        files = by_split[split]
    else:
        splits, split, files = [], None, [path]
    rows, bytes_on_disk, schema = 0, 0, None
    for f in files:
        try:
            meta = pq.ParquetFile(str(f)).metadata
        except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds
            raise DoctorError(f"{f}: not a readable Parquet file: {e}") from None
        rows += meta.num_rows
        schema = schema or meta.schema.to_arrow_schema()
        bytes_on_disk += f.stat().st_size
    features: Mapping[str, Any] = {}
    if schema.metadata and b"huggingface" in schema.metadata:
        features = json.loads(schema.metadata[b"huggingface"]).get("info", {}).get("features", {})
    columns = tuple(Column(fld.name, _feature_type(features[fld.name]) if fld.name in features
                           else str(fld.type)) for fld in schema)
    image_column = None
    image = features.get("image")
    if isinstance(image, dict) and image.get("_type") == "Image":
        image_column = "image"
        notes: Tuple[str, ...] = (
            "images stored as encoded files in the Image column 'image' of Parquet files: "
            "`docfeed pack` reads them with its own Parquet reader and keeps their bytes (or "
            "stores the Donut preset's resized pages with --preprocess donut)",)
    else:
        notes = ("no Image column 'image': `docfeed pack` needs one (or a List(Image) of pages)",)
    pathologies = []
    bps = bytes_on_disk / rows if rows else 0.0
    if bps > HUGE_ROW_BYTES:
        pathologies.append(Pathology(
            "huge-rows", f"{human_bytes(bps)} per row: decoding large scans dominates; packing "
            "with --preprocess donut stores the resized page", {"bytes_per_sample": bps}))
    source = StoredSource(split_dir=path if path.is_dir() else path.parent,
                          data_files=tuple(files), image_column=image_column)
    return Stored(path=path, kind="parquet", samples=rows, bytes_on_disk=bytes_on_disk,
                  source=source, split=split, splits=tuple(splits), columns=columns,
                  pathologies=tuple(pathologies), notes=notes)


WEBDATASET_IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "webp", "tif", "tiff", "ppm", "pgm", "pnm",
                               "gif", "bmp")


def inspect_webdataset(path: pathlib.Path) -> Stored:
    import tarfile

    shards = [path] if path.is_file() else [f for f in _files(path, 0) if _is_tar(f)]
    keys: List[str] = []
    extensions: Dict[str, None] = {}
    bytes_on_disk = 0
    for shard in shards:
        bytes_on_disk += shard.stat().st_size
        try:
            with tarfile.open(str(shard)) as tar:
                last = None
                for member in tar:
                    if not member.isfile():
                        continue
                    base = member.name.rsplit("/", 1)[-1]
                    if "." not in base:
                        continue
                    key = member.name[: len(member.name) - len(base)] + base.split(".", 1)[0]
                    extensions.setdefault(base.split(".", 1)[1].lower(), None)
                    if key != last:
                        keys.append(key)
                        last = key
        except (tarfile.TarError, OSError) as e:
            raise DoctorError(f"{shard}: not a readable tar shard: {e}") from None
    columns = tuple(Column(e, "image" if e in WEBDATASET_IMAGE_EXTENSIONS else "member")
                    for e in extensions)
    source = StoredSource(split_dir=path if path.is_dir() else path.parent,
                          data_files=tuple(shards))
    return Stored(path=path, kind="webdataset", samples=len(keys), bytes_on_disk=bytes_on_disk,
                  source=source, columns=columns,
                  notes=("WebDataset shards: `docfeed pack` groups members by key, the first "
                         "image member is the sample's image",))


def inspect(path: "pathlib.Path | str", kind: str, size: Tuple[int, int],
            budget: Budget) -> Stored:
    """Part 1 for a dataset of `kind` (detect_kind); DoctorError when it holds no samples."""
    if kind == "save_to_disk":
        stored = inspect_save_to_disk(path, budget)
    elif kind == "imagefolder":
        stored = inspect_imagefolder(path, size)
        if not stored.samples:
            raise DoctorError(f"{path}: an image folder without images")
    elif kind == "parquet":
        stored = inspect_parquet(path)
    elif kind == "webdataset":
        stored = inspect_webdataset(path)
    else:
        stored = inspect_docfeed(path)
    if not stored.samples:
        raise DoctorError(f"{path}: the dataset has no samples")
    return stored


def arrow_rows(source: StoredSource) -> Iterator[Tuple[Any, int]]:
    """(record batch, row) of the examined split's Arrow files, in storage order."""
    import pyarrow as pa

    for f in source.data_files:
        with pa.memory_map(str(f)) as src:
            for b in pa.ipc.open_stream(src):
                for r in range(b.num_rows):
                    yield b, r

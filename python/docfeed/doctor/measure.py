"""Part 2 of `docfeed doctor`, the user's side: the disk's read rate and the time per batch of
the user's own path (datasets + a torch DataLoader, or what pyarrow alone can measure).

Each measurement returns a frozen `Measured` (one pipeline: time per batch and by stage, as
measured on warm pages) or a `DiskRead`; what the report should say about how it was measured
comes back as notes next to it (`Measurements`), never appended to a shared list."""
from __future__ import annotations

import os
import pathlib
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from docfeed.doctor.common import (DEFAULT_SIZE, DOCUMENT_SUFFIXES, PDF_DPI, Budget, Stages,
                                   stages_json)
from docfeed.doctor.stored import Stored, arrow_rows


@dataclass(frozen=True)
class DiskRead:
    """Sequential read rate of the data files: cold (after asking the kernel to drop them from
    the page cache) and warm (the same bytes again); likely_warm when the drop evidently
    failed."""

    cold_mb_s: float
    warm_mb_s: float
    bytes: int
    dropped: bool
    likely_warm: bool

    @classmethod
    def not_measured(cls) -> "DiskRead":
        return cls(0.0, 0.0, 0, False, True)

    def to_json(self) -> Dict[str, Any]:
        return {"cold_mb_s": self.cold_mb_s, "warm_mb_s": self.warm_mb_s, "bytes": self.bytes,
                "dropped": self.dropped, "likely_warm": self.likely_warm}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "DiskRead":
        return cls(float(d["cold_mb_s"]), float(d["warm_mb_s"]), int(d["bytes"]),
                   bool(d["dropped"]), bool(d["likely_warm"]))


@dataclass(frozen=True)
class Sampling:
    """How a user pipeline was measured: batches run and the batch size they had (smaller than
    --batch-size when the time box forced it; the times are then scaled)."""

    measured_batches: float
    measured_batch_size: int


@dataclass(frozen=True)
class LoaderRun:
    """One in-process run of docfeed's loader with no consumer work (what `docfeed bench`
    measures, with its JSON keys): pages delivered after the first batch and the seconds they
    took (so pages_per_s excludes the start-up), the time to the first batch, the stage times
    per page summed over the worker threads (ms), the waits (the consumer for a batch, the
    workers for a free buffer, in s), and memory (the process's peak RSS, the batch pool, the
    RSS after each epoch)."""

    dataset: str
    preprocessed: bool
    threads: int
    batch_size: int
    preset: str  # "donut": doctor measures Donut's preprocessing
    height: int
    width: int
    hf_version: int  # the DonutImageProcessor generation reproduced (4 or 5)
    backend: str  # its backend: "pil" or (5 only) "torchvision"
    # The preset's settings as `docfeed bench --json` gives them (height, width,
    # align_long_axis, hf_version, backend for Donut).
    preset_options: Mapping[str, Any]
    dtype: str
    pages: int
    seconds: float
    pages_per_s: float
    first_batch_s: float
    stored_bytes: int
    ms_per_page: Mapping[str, float]
    consumer_wait_s: float
    buffer_wait_s: float
    peak_rss_bytes: int
    pool_bytes: int
    bad_samples: int
    baseline_ms_per_page: float = 0.0
    rss_after_epoch: Tuple[int, ...] = ()
    # The process's HTTP requests over the run (Create included), as `docfeed bench --json`'s
    # "http": requests, connections, bytes, retries, errors, throttled (all 0 for a local
    # dataset).
    http: Mapping[str, int] = field(default_factory=dict)
    # Every loader statistic, as LoaderStatsJson renders it (the "stats" of `docfeed bench
    # --json`): each stage {"count", "nanos"}, the counters, the first bad-sample messages.
    stats: Mapping[str, Any] = field(default_factory=dict)
    # The consumer's time per batch (`docfeed bench --step-ms`); doctor's own runs take each
    # batch at once. In the JSON after batch_size, where `docfeed bench --json` puts it.
    step_ms: int = 0

    def to_json(self) -> Dict[str, Any]:
        out = {}
        for f in fields(self):
            if f.name != "step_ms":
                out[f.name] = getattr(self, f.name)
            if f.name == "batch_size":
                out["step_ms"] = self.step_ms
        out["preset_options"] = dict(self.preset_options)
        out["ms_per_page"] = dict(self.ms_per_page)
        out["rss_after_epoch"] = list(self.rss_after_epoch)
        out["http"] = dict(self.http)
        out["stats"] = dict(self.stats)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "LoaderRun":
        # Reports written before "preset" and "preset_options" existed were Donut runs; before
        # "step_ms", runs that took each batch at once.
        d = {"preset": "donut", "step_ms": 0, **d}
        d.setdefault("preset_options", {k: d[k] for k in ("height", "width", "hf_version",
                                                          "backend")})
        values = {f.name: d[f.name] for f in fields(cls)}
        values["preset_options"] = dict(values["preset_options"])
        values["ms_per_page"] = dict(values["ms_per_page"])
        values["rss_after_epoch"] = tuple(values["rss_after_epoch"])
        values["http"] = dict(values["http"])
        values["stats"] = dict(values["stats"])
        return cls(**values)


@dataclass(frozen=True)
class DocfeedSample:
    """docfeed's side of a pipeline: the sample it was measured on (rows, bytes per sample once
    packed, packing seconds per sample, 0 when PATH already is docfeed) and the loader run."""

    sample_rows: int
    bytes_per_sample: float
    pack_s_per_sample: float
    bench: LoaderRun

    def to_json(self) -> Dict[str, Any]:
        return {"pack_s_per_sample": self.pack_s_per_sample,
                "bytes_per_sample": self.bytes_per_sample, "bench": self.bench.to_json(),
                "sample_rows": self.sample_rows}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "DocfeedSample":
        return cls(sample_rows=int(d["sample_rows"]), bytes_per_sample=d["bytes_per_sample"],
                   pack_s_per_sample=d["pack_s_per_sample"],
                   bench=LoaderRun.from_json(d["bench"]))


@dataclass(frozen=True)
class Measured:
    """One pipeline as measured: seconds per batch of --batch-size samples and by stage,
    workers (DataLoader processes, or docfeed's threads), kind "user" or "docfeed", and either
    the user path's `sampling` or docfeed's `docfeed` facts (the packed sample and the loader
    run)."""

    name: str
    batch_s: float
    stages: Stages
    workers: int
    kind: str
    sampling: Optional[Sampling] = None
    docfeed: Optional[DocfeedSample] = None

    @property
    def measured_batch_size(self) -> Optional[int]:
        return self.sampling.measured_batch_size if self.sampling is not None else None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"name": self.name, "batch_s": self.batch_s,
                               "stages": stages_json(self.stages), "workers": self.workers}
        if self.sampling is not None:
            out["measured_batches"] = self.sampling.measured_batches
            out["measured_batch_size"] = self.sampling.measured_batch_size
        out["kind"] = self.kind
        if self.docfeed is not None:
            out.update(self.docfeed.to_json())
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Measured":
        sampling = (Sampling(d["measured_batches"], int(d["measured_batch_size"]))
                    if "measured_batch_size" in d else None)
        docfeed = DocfeedSample.from_json(d) if "bench" in d else None
        return cls(name=d["name"], batch_s=float(d["batch_s"]), stages=dict(d["stages"]),
                   workers=int(d["workers"]), kind=d["kind"], sampling=sampling, docfeed=docfeed)


@dataclass(frozen=True)
class Measurements:
    """What a measurement step gives: its pipelines and its notes for the report."""

    pipelines: Tuple[Measured, ...] = ()
    notes: Tuple[str, ...] = ()


# ----------------------------------------------------------------------------------------------
# The disk.


def measure_disk(files: Sequence[pathlib.Path], seconds: float, limit: int = 1 << 30) -> DiskRead:
    """Sequential read rate: cold (page cache dropped first with posix_fadvise DONTNEED, after
    fdatasync so dirty pages can go) and warm (the same bytes again)."""
    if not files:
        return DiskRead.not_measured()
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
    return DiskRead(cold_mb_s=cold, warm_mb_s=warm, bytes=cold_bytes, dropped=dropped,
                    likely_warm=likely_warm)


# ----------------------------------------------------------------------------------------------
# The user's path: a torch DataLoader over datasets, or pyarrow alone.


def _default_collator() -> Tuple[Callable[[List[Dict[str, Any]]], Any], str]:
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


@dataclass(frozen=True)
class _LoaderTiming:
    batches: int
    batch_s: float
    stages: Stages


def _time_loader(dataset: Any, batch_size: int, workers: int, batches: int, seconds: float,
                 collate: Callable[[Any], Any]) -> _LoaderTiming:
    """Wall time per batch of a torch DataLoader over `dataset` (at least `batches` batches,
    more while time is left); at 0 workers also the collate share."""
    import torch

    collate_s = [0.0]  # written by the collate wrapper (in this process at 0 workers)

    def timed(features: Any) -> Any:
        t = time.perf_counter()
        out = collate(features)
        collate_s[0] += time.perf_counter() - t
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
    batch_s = (time.perf_counter() - start) / max(n, 1)
    if workers == 0:
        c = collate_s[0] / max(n, 1)
        stages: Stages = {"fetch + to Python": batch_s - c, "collate": c}
    else:
        stages = {f"{workers} workers (fetch + collate)": batch_s}
    return _LoaderTiming(n, batch_s, stages)


def _measure_pair(dataset: Any, batch: int, workers: int, budget: Budget,
                  collate: Callable[[Any], Any], name: str,
                  stage0: Optional[str]) -> Tuple[Measured, ...]:
    """The DataLoader at 0 and at `workers` workers, time-boxed.

    A one-sample probe gives the cost per sample c. When a whole batch does not fit in a run's
    share of the budget, the run uses smaller batches (at least one sample per worker) and its
    times are scaled to `batch` (the fetch, the conversion and the collate are all linear in
    the samples); the result records the batch size it measured."""
    import torch.utils.data

    probe = _time_loader(dataset, 1, 0, 1, 0.0, collate)
    per_sample = max(probe.batch_s, 1e-6)
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
        stages = {k: v * scale for k, v in r.stages.items()}
        if stage0 and w == 0:
            stages = {stage0: sum(stages.values())}
        out.append(Measured(name=f"{name}, {w} workers", batch_s=r.batch_s * scale,
                            stages=stages, workers=w, kind="user",
                            sampling=Sampling(r.batches, b)))
    return tuple(out)


def _measure_pylist(stored: Stored, k: int, batch: int, budget: Budget) -> Measured:
    """What datasets does per row with no format set, measured with pyarrow alone: up to k rows
    (at least one, then while the share of the budget lasts) converted with to_pylist, the
    mean scaled to a batch."""
    limit = time.perf_counter() + budget.share(0.4)
    rows, convert = 0, 0.0
    for b, r in arrow_rows(stored.source):
        t = time.perf_counter()
        b.slice(r, 1).to_pylist()
        convert += time.perf_counter() - t
        rows += 1
        if rows >= k or time.perf_counter() > limit:
            break
    per_row = convert / max(rows, 1)
    return Measured(name="pyarrow read + to_pylist, 1 process", batch_s=per_row * batch,
                    stages={"read + to Python": per_row * batch}, workers=0, kind="user",
                    sampling=Sampling(rows / batch, min(rows, batch)))


def measure_user_save_to_disk(stored: Stored, k: int, batch: int, workers: int,
                              budget: Budget) -> Measurements:
    """load_from_disk + DataLoader (default collator) at 0 and `workers` workers, or without
    datasets/torch the pyarrow read + to_pylist cost."""
    try:
        import datasets
        import torch  # noqa: F401
    except ImportError as e:
        note = (f"datasets/torch not importable ({e}): measured what pyarrow can, the read "
                "and the conversion to Python objects datasets does with no format set "
                "(to_pylist); the collator's torch.tensor over the nested lists comes on "
                "top of it")
        return Measurements((_measure_pylist(stored, k, batch, budget),), (note,))
    ds = datasets.load_from_disk(str(stored.source.split_dir))
    sub = ds.select(range(min(k, len(ds))))
    collate, collate_name = _default_collator()
    note = (f"user path: datasets {datasets.__version__} load_from_disk, torch DataLoader, "
            f"collate_fn = {collate_name}, format as stored "
            f"({stored.source.format_type or 'none: Python lists'})")
    pipes = _measure_pair(sub, batch, workers, budget, collate, "datasets + DataLoader", None)
    return Measurements(pipes, (note,))


def measure_user_imagefolder(stored: Stored, k: int, batch: int, workers: int,
                             budget: Budget) -> Measurements:
    """The on-the-fly path: a datasets Image column decoded by PIL and DonutImageProcessor in a
    set_transform, DataLoader at 0 and N workers (the images of an image folder, or the Image
    column of a save_to_disk dataset)."""
    try:
        import datasets
        import torch
    except ImportError as e:
        return Measurements((), (f"datasets/torch not importable ({e}): the Python path was not "
                                 "measured",))
    h, w = stored.image_size or DEFAULT_SIZE
    try:
        from transformers import DonutImageProcessor

        proc = DonutImageProcessor(size={"height": h, "width": w}, do_align_long_axis=False)
        pad = {"random_padding": True} if _takes_random_padding(proc) else {}

        def transform(b: Dict[str, Any]) -> Dict[str, Any]:
            px = proc([im.convert("RGB") for im in b["image"]], return_tensors="pt",
                      **pad)["pixel_values"]
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
    cache = None  # load_dataset's Arrow cache for Parquet and WebDataset, removed at the end
    if stored.kind in ("parquet", "webdataset"):
        import tempfile

        cache = tempfile.TemporaryDirectory(prefix="docfeed-doctor-")
        files = [str(f) for f in stored.source.data_files]
        ds = datasets.load_dataset(stored.kind, data_files={"train": files}, split="train",
                                   cache_dir=cache.name)
        column = stored.source.image_column
        if column is None:  # WebDataset: the first image extension's column
            column = next((c for c in ds.column_names
                           if isinstance(ds.features[c], datasets.Image)), None)
            if column is None:
                cache.cleanup()
                return Measurements((), ("no image column in the shards: the Python path was "
                                         "not measured",))
        ds = ds.select(range(min(k, len(ds)))).select_columns([column])
        if column != "image":
            ds = ds.rename_column(column, "image")
        ds = ds.filter(lambda r: r["image"] is not None)
        where = f"datasets {datasets.__version__} load_dataset(\"{stored.kind}\")"
    elif stored.source.image_column is not None:
        ds = datasets.load_from_disk(str(stored.source.split_dir))
        ds = ds.select(range(min(k, len(ds)))).select_columns([stored.source.image_column])
        where = f"datasets {datasets.__version__} load_from_disk"
    elif any(p.suffix.lower() in DOCUMENT_SUFFIXES for p in stored.source.images[:k]):
        # PDF pages as pdf2image gives them: pdftoppm renders each page (at pack's 200 dpi).
        ds = _pdf_pages_dataset(stored, k)
        if ds is None:
            return Measurements((), ("pdftoppm (poppler-utils) is not installed: the Python "
                                     "path over PDF pages was not measured",))
        where = f"image folder with PDFs rendered by pdftoppm -r {PDF_DPI}, as pdf2image does"
    else:
        files = [str(p) for p in stored.source.images[:k]]
        ds = datasets.Dataset.from_dict({"image": files}).cast_column("image", datasets.Image())
        where = "image folder"
    ds.set_transform(transform)
    note = (f"user path ({where}): datasets Image column + {label} in set_transform, "
            "torch DataLoader")

    def collate(rows: List[Dict[str, Any]]) -> Any:
        px = [r["pixel_values"] for r in rows]
        try:
            return torch.stack(px)
        except RuntimeError:  # PIL-only fallback: sizes differ
            return px

    short = label.split(" (")[0]
    try:
        pipes = _measure_pair(ds, batch, workers, budget, collate, f"datasets Image + {short}",
                              f"decode + {short}")
    finally:
        if cache is not None:
            del ds
            cache.cleanup()
    return Measurements(pipes, (note,))


def _pdf_pages_dataset(stored: Stored, k: int) -> Any:
    """A torch Dataset of the first k samples of an image folder holding PDFs (each page of a
    document one sample, as docfeed packs them), whose items are {"image": PIL image} rendered
    on access by pdftoppm (what pdf2image runs); None without pdftoppm."""
    import io
    import shutil
    import subprocess

    from PIL import Image as PILImage

    tool = shutil.which("pdftoppm")
    if tool is None:
        return None
    refs: List[Tuple[pathlib.Path, int]] = []
    pages = stored.source.pages or (1,) * len(stored.source.images)
    for p, n in zip(stored.source.images, pages):
        is_pdf = p.suffix.lower() in DOCUMENT_SUFFIXES
        for page in range(1, (max(n, 1) if is_pdf else 1) + 1):
            refs.append((p, page if is_pdf else 0))
        if len(refs) >= k:
            break
    refs = refs[:k]

    class Pages:
        def __init__(self) -> None:
            self.transform: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None

        def set_transform(self, transform: Callable[[Dict[str, Any]], Dict[str, Any]]) -> None:
            self.transform = transform

        def __len__(self) -> int:
            return len(refs)

        def __getitem__(self, i: int) -> Dict[str, Any]:
            path, page = refs[i]
            if page:
                png = subprocess.run([tool, "-r", str(PDF_DPI), "-f", str(page), "-l", str(page),
                                      "-singlefile", "-png", str(path)], capture_output=True,
                                     check=True).stdout
                image = PILImage.open(io.BytesIO(png))
            else:
                image = PILImage.open(path)
            out = self.transform({"image": [image]}) if self.transform else {"image": [image]}
            return {key: value[0] for key, value in out.items()}

    return Pages()


def measure_user(stored: Stored, k: int, batch: int, workers: int,
                 budget: Budget) -> Measurements:
    """The user's path for the kind of data (a docfeed dataset has none: it already is
    docfeed)."""
    if stored.kind == "save_to_disk" and stored.source.image_column is None:
        return measure_user_save_to_disk(stored, k, batch, workers, budget)
    if stored.kind in ("imagefolder", "save_to_disk", "parquet", "webdataset"):
        return measure_user_imagefolder(stored, k, batch, workers, budget)
    return Measurements()


def _takes_random_padding(proc: Any) -> bool:
    """Whether the processor's call accepts random_padding: transformers 4.x's does (the
    recipe's flag), 5.x's DonutImageProcessor refuses the keyword with a TypeError (its padding
    is centred), so the user's path is measured without it there. Probed on one tiny image."""
    from PIL import Image

    try:
        proc(Image.new("RGB", (8, 8)), random_padding=True, return_tensors="np")
    except TypeError:
        return False
    return True

"""Part 2 of `docfeed doctor`, docfeed's side: the same samples as the user's path, packed (or
migrated) into a temporary directory, then docfeed's loader run in this process through the
Python binding, with no consumer work, timed as `docfeed bench` times it.

An image-folder sample is packed in process by docfeed.pack where it applies the Donut preset
itself (`preprocess=`, `size=`); a save_to_disk sample (a migration of float pixel tensors) and,
with an older docfeed.pack, an image folder still go through the CLI (`pack_sample_with_cli`,
the one place doctor starts a process). The measurement itself never leaves this process."""
from __future__ import annotations

import json
import math
import os
import pathlib
import resource
import shutil
import subprocess
import time
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

from docfeed.doctor.common import (DEFAULT_SIZE, DOCUMENT_SUFFIXES, Budget, DoctorError,
                                   dir_bytes, load_json)
from docfeed.doctor.measure import DocfeedSample, LoaderRun, Measured, Measurements
from docfeed.doctor.stored import Stored

MAX_BATCHES = 12  # batches per epoch the loader run takes (the first, cold one not counted)
# The loader's stage timers (stats()) as the report names them, in pipeline order.
STAGE_NAMES = {"read": "read", "decode": "decode", "resize": "resize",
               "decode_resize": "decode+resize", "pad_normalize": "pad"}


# ----------------------------------------------------------------------------------------------
# The sample, in the user's own layout.


def write_sample_save_to_disk(stored: Stored, k: int, dest: pathlib.Path) -> int:
    """The first k rows of the examined split as a save_to_disk directory (pyarrow: the same
    schema, state.json and dataset_info.json). Returns the rows written."""
    import pyarrow as pa

    src_dir = stored.source.split_dir
    dest.mkdir(parents=True)
    out_file = dest / "data-00000-of-00001.arrow"
    left, writer = k, None
    with pa.OSFile(str(out_file), "wb") as sink:
        for f in stored.source.data_files:
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
    state = load_json(src_dir / "state.json")
    state["_data_files"] = [{"filename": out_file.name}]
    (dest / "state.json").write_text(json.dumps(state, indent=2))
    if (src_dir / "dataset_info.json").exists():
        shutil.copy(src_dir / "dataset_info.json", dest / "dataset_info.json")
    return k - left


def write_sample_imagefolder(stored: Stored, k: int, dest: pathlib.Path) -> int:
    """The first k images and their metadata rows as an image folder. Returns the images
    written."""
    dest.mkdir(parents=True)
    images, metadata = stored.source.images, stored.source.metadata
    with open(dest / "metadata.jsonl", "w", encoding="utf-8") as meta:
        for i, (path, row) in enumerate(zip(images[:k], metadata[:k])):
            name = f"images/{i:06d}{path.suffix.lower()}"
            (dest / "images").mkdir(exist_ok=True)
            shutil.copy(path, dest / name)
            meta.write(json.dumps(dict(row, file_name=name)) + "\n")
    return min(k, len(images))


def in_process_pack() -> Optional[Callable[..., Any]]:
    """docfeed.pack when it packs rows in process with the Donut preset (it takes preprocess=
    and size=), else None (an older docfeed.pack writes a folder and runs the CLI)."""
    import inspect

    import docfeed

    pack = getattr(docfeed, "pack", None)
    try:
        params = inspect.signature(pack).parameters
    except (TypeError, ValueError):
        return None
    return pack if {"preprocess", "size", "threads"} <= set(params) else None


def pack_imagefolder_sample(stored: Stored, k: int, tmp: pathlib.Path, threads: int,
                            size: Tuple[int, int],
                            timeout: float) -> Tuple[pathlib.Path, int, float]:
    """The first k images packed with --preprocess donut at size: (output, rows, seconds).
    In process (docfeed.pack over the rows: the image files and their metadata) where
    in_process_pack() allows, else an image folder of the sample packed by the CLI."""
    out = tmp / "sample.docfeed"
    pack = in_process_pack()
    if any(p.suffix.lower() in DOCUMENT_SUFFIXES for p in stored.source.images[:k]):
        # PDF documents: the sample folder packed by docfeed.pack(PATH) in process (pages are
        # rendered while the folder is listed), or by the CLI with an older docfeed.pack.
        files, pages = 0, 0
        for n_pages in stored.source.pages or (1,) * len(stored.source.images):
            files, pages = files + 1, pages + max(n_pages, 1)
            if pages >= k:
                break
        write_sample_imagefolder(stored, files, tmp / "sample-src")
        if pack is None:
            options = ["--preprocess", "donut", "--size", f"{size[0]}x{size[1]}"]
            seconds = pack_sample_with_cli(tmp / "sample-src", out, threads, options, timeout)
        else:
            start = time.perf_counter()
            pack(tmp / "sample-src", out, preprocess="donut", size=size, threads=threads)
            seconds = time.perf_counter() - start
        return out, int(load_json(out / "docfeed.json").get("num_samples", 0)), seconds
    if pack is None:
        n = write_sample_imagefolder(stored, k, tmp / "sample-src")
        options = ["--preprocess", "donut", "--size", f"{size[0]}x{size[1]}"]
        return out, n, pack_sample_with_cli(tmp / "sample-src", out, threads, options, timeout)
    rows = [dict({c: v for c, v in meta.items() if c != "file_name"}, image={"path": str(p)})
            for p, meta in zip(stored.source.images[:k], stored.source.metadata[:k])]
    try:  # docfeed.pack checks for a datasets.Dataset: a one-time import, no per-sample cost
        import datasets  # noqa: F401
    except ImportError:
        pass
    start = time.perf_counter()
    pack(rows, out, image_column="image", preprocess="donut", size=size, threads=threads)
    return out, len(rows), time.perf_counter() - start


def pack_saved_images_sample(stored: Stored, k: int, tmp: pathlib.Path, threads: int,
                             size: Tuple[int, int]) -> Tuple[pathlib.Path, int, float]:
    """The first k rows of a save_to_disk dataset with an Image column, packed in process
    (docfeed.pack of the sample's directory) with --preprocess donut at size: (output, rows,
    seconds)."""
    import docfeed

    src, out = tmp / "sample-src", tmp / "sample.docfeed"
    n = write_sample_save_to_disk(stored, k, src)
    start = time.perf_counter()
    docfeed.pack(src, out, preprocess="donut", size=size, threads=threads)
    return out, n, time.perf_counter() - start


def write_sample_parquet(stored: Stored, k: int, dest: pathlib.Path) -> int:
    """The first k rows of the examined split's Parquet files as one Parquet file (pyarrow:
    the same schema, its Hugging Face features included). Returns the rows written."""
    import pyarrow.parquet as pq

    left, writer = k, None
    try:
        for f in stored.source.data_files:
            pf = pq.ParquetFile(str(f))
            for batch in pf.iter_batches(batch_size=64):
                if left <= 0:
                    break
                writer = writer or pq.ParquetWriter(str(dest), pf.schema_arrow)
                part = batch.slice(0, min(left, batch.num_rows))
                writer.write_batch(part)
                left -= part.num_rows
            if left <= 0:
                break
    finally:
        if writer is not None:
            writer.close()
    return k - left


def write_sample_webdataset(stored: Stored, k: int, dest: pathlib.Path) -> int:
    """The members of the first k samples (consecutive members sharing a key) as one tar shard.
    Returns the samples written."""
    import tarfile

    samples, last = 0, None
    with tarfile.open(str(dest), "w") as out:
        for shard in stored.source.data_files:
            with tarfile.open(str(shard)) as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    base = member.name.rsplit("/", 1)[-1]
                    key = member.name[: len(member.name) - len(base)] + base.split(".", 1)[0]
                    if key != last:
                        if samples == k:
                            return samples
                        samples, last = samples + 1, key
                    out.addfile(member, tar.extractfile(member))
    return samples


def pack_document_sample(stored: Stored, k: int, tmp: pathlib.Path, threads: int,
                         size: Tuple[int, int]) -> Tuple[pathlib.Path, int, float]:
    """The first k rows (Parquet) or samples (WebDataset) in the user's own format, packed in
    process (docfeed.pack of the sample file) with --preprocess donut at size: (output, rows,
    seconds)."""
    import docfeed

    out = tmp / "sample.docfeed"
    if stored.kind == "parquet":
        src = tmp / "sample.parquet"
        n = write_sample_parquet(stored, k, src)
    else:
        src = tmp / "sample.tar"
        n = write_sample_webdataset(stored, k, src)
    start = time.perf_counter()
    docfeed.pack(src, out, preprocess="donut", size=size, threads=threads)
    return out, n, time.perf_counter() - start


def pack_sample_with_cli(src: pathlib.Path, out: pathlib.Path, threads: int,
                         options: Sequence[str], timeout: float) -> float:
    """`docfeed pack SRC -o OUT --threads N OPTIONS` through the bundled CLI; returns its
    seconds. DoctorError with the CLI's message when it fails.

    FOR NOW the only process doctor starts: replace it with an in-process docfeed.pack once
    that migrates float pixel tensors (--pixel-column), as it already packs image rows with
    the Donut preset (pack_imagefolder_sample)."""
    from docfeed import cli_path

    args = [cli_path(), "pack", str(src), "-o", str(out), "--threads", str(threads),
            *map(str, options)]
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=max(timeout, 5.0))
    if proc.returncode != 0:
        raise DoctorError(f"docfeed pack {src} failed: "
                          f"{(proc.stderr or proc.stdout).strip()[-600:]}")
    return time.perf_counter() - start


# ----------------------------------------------------------------------------------------------
# The loader, in this process.


def _current_rss_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _loader_errors() -> Tuple[type, ...]:
    """What docfeed.Loader raises for a dataset it cannot load (docfeed.Error where the
    package has its own hierarchy; built-ins otherwise)."""
    import docfeed

    own = getattr(docfeed, "Error", None)
    return (OSError, ValueError, RuntimeError) + ((own,) if isinstance(own, type) else ())


def run_loader(path: pathlib.Path, batch: int, threads: int, size: Tuple[int, int],
               epochs: int, max_batches: int = MAX_BATCHES,
               seconds: Optional[float] = None) -> LoaderRun:
    """docfeed.Loader on `path` with no consumer work, as `docfeed bench --dtype uint8` runs it
    (uint8 HWC, random padding, shuffled, partial last batch, prefetch 4): `epochs` epochs of at
    most `max_batches` batches, each batch handed back to the pool as soon as it arrives.
    Throughput counts from the first batch on. `seconds` bounds the run (then it reports what it
    delivered until then). Raises what docfeed.Loader raises."""
    from docfeed import Loader, remote_stats

    http_before = remote_stats()
    created = time.perf_counter()
    loader = Loader(os.fspath(path), batch_size=batch, image_size=size, shuffle=True, seed=0,
                    pad="random", dtype="uint8", layout="hwc", drop_last=False,
                    num_threads=threads, prefetch=4, rank=0, world_size=1, max_held=2)
    try:
        # The raw batches of the binding: nothing is wrapped as a tensor (no torch needed, no
        # consumer work), as the C++ bench consumes them.
        core = loader._core
        stop = created + seconds if seconds is not None else math.inf
        start, first_batch_s, pages, batches = created, 0.0, 0, 0
        rss_after_epoch: List[int] = []
        for epoch in range(epochs):
            core.start_epoch(epoch)
            for _ in range(min(core.num_batches, max_batches)):
                b = core.next()
                if b is None:
                    break
                now = time.perf_counter()
                if batches == 0:
                    first_batch_s, start = now - created, now
                else:
                    pages += b.size
                batches += 1
                b.release()
                if now > stop:
                    break
            rss_after_epoch.append(_current_rss_bytes())
            if time.perf_counter() > stop:
                break
        elapsed = time.perf_counter() - start
        stats: Mapping[str, Any] = core.stats()
        all_stats = json.loads(core.stats_json())
        preprocessed = bool(loader.preprocessed)
        generation = (int(loader._core_args["hf_version"]), str(loader._core_args["backend"]))
        align_long_axis = bool(loader._core_args["align_long_axis"])
    finally:
        loader.close()
    http_after = remote_stats()
    http = {k: int(http_after[k]) - int(http_before[k])
            for k in ("requests", "connections", "bytes", "retries", "errors", "throttled")}
    samples = max(int(stats.get("samples", 0)), 1)
    ms_per_page = {k: (stats[k][1] * 1e3 / samples if k in stats else 0.0) for k in STAGE_NAMES}
    return LoaderRun(
        dataset=os.fspath(path), preprocessed=preprocessed, threads=threads, batch_size=batch,
        preset="donut", height=size[0], width=size[1], hf_version=generation[0],
        backend=generation[1],
        preset_options={"height": size[0], "width": size[1], "align_long_axis": align_long_axis,
                        "hf_version": generation[0], "backend": generation[1]},
        dtype="uint8", pages=pages, seconds=elapsed,
        pages_per_s=pages / elapsed if elapsed > 0 else 0.0, first_batch_s=first_batch_s,
        stored_bytes=int(stats.get("stored_bytes", 0)), ms_per_page=ms_per_page,
        consumer_wait_s=float(stats["consumer_wait"][1]),
        buffer_wait_s=float(stats["buffer_wait"][1]),
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        pool_bytes=int(stats.get("pool_bytes", 0)), bad_samples=int(stats.get("bad_samples", 0)),
        rss_after_epoch=tuple(rss_after_epoch), http=http, stats=all_stats)


def _stages(run: LoaderRun, batch_s: float) -> Mapping[str, float]:
    """The batch time split by the loader's stage times (per page, summed over threads: divided
    by the threads for wall time), the negligible ones (< 1 %) left out."""
    raw = {STAGE_NAMES[k]: v * run.batch_size / 1000 / run.threads
           for k, v in run.ms_per_page.items() if k in STAGE_NAMES and v > 0}
    total = sum(raw.values())
    raw = {k: v for k, v in raw.items() if v >= 0.01 * total}
    total = sum(raw.values())
    return {k: v * batch_s / total for k, v in raw.items()} if total > 0 else {"loader": batch_s}


def measure_docfeed(stored: Stored, k: int, batch: int, threads: int, budget: Budget,
                    tmp: pathlib.Path) -> Measurements:
    """docfeed's time per batch on the same samples: the first k migrated (save_to_disk) or
    packed with the Donut preset (image folder), or PATH itself when it is docfeed; then about
    MAX_BATCHES batches of the loader after the first."""
    h, w = stored.image_size or DEFAULT_SIZE
    pack_s, n = 0.0, stored.samples
    try:
        if stored.kind == "docfeed":
            out, packed_bytes = stored.source.split_dir, stored.bytes_on_disk
        else:
            if stored.kind == "save_to_disk" and stored.source.image_column is not None:
                out, n, pack_s = pack_saved_images_sample(stored, k, tmp, threads, (h, w))
            elif stored.kind in ("parquet", "webdataset"):
                out, n, pack_s = pack_document_sample(stored, k, tmp, threads, (h, w))
            elif stored.kind == "save_to_disk":
                if stored.source.tensor_column is None:
                    return Measurements(notes=("docfeed path not measured: no pixel tensor "
                                               "column to migrate",))
                src, out = tmp / "sample-src", tmp / "sample.docfeed"
                n = write_sample_save_to_disk(stored, k, src)
                column = stored.source.tensor_column
                options = ["--pixel-column", column] if column != "pixel_values" else []
                pack_s = pack_sample_with_cli(src, out, threads, options, budget.left() + 60)
            else:
                out, n, pack_s = pack_imagefolder_sample(stored, k, tmp, threads, (h, w),
                                                         budget.left() + 60)
            packed_bytes = dir_bytes(out)
        per_epoch = max(1, n // batch)
        epochs = 1 if stored.kind == "docfeed" else max(1, min(50, math.ceil(12 / per_epoch)))
        run = run_loader(out, batch, threads, (h, w), epochs, seconds=budget.left() + 60)
    except (DoctorError, subprocess.TimeoutExpired, *_loader_errors()) as e:
        return Measurements(notes=(f"docfeed path not measured: {e}",))
    if run.pages_per_s <= 0:
        return Measurements(notes=("docfeed path not measured: the loader delivered no pages "
                                   "after the first batch",))
    batch_s = batch / run.pages_per_s
    rows = n if stored.kind != "docfeed" else stored.samples
    sample = DocfeedSample(sample_rows=rows, bytes_per_sample=packed_bytes / max(rows, 1),
                           pack_s_per_sample=pack_s / max(rows, 1) if pack_s else 0.0,
                           bench=run)
    return Measurements((Measured(name=f"docfeed.Loader, {run.threads} threads", batch_s=batch_s,
                                  stages=_stages(run, batch_s), workers=run.threads,
                                  kind="docfeed", docfeed=sample),))

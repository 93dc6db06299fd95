"""`docfeed doctor PATH`: where is the input bottleneck of a Donut training job, measured.

PATH is a `datasets` save_to_disk directory (a Dataset or a DatasetDict: the "train" split, else
the first, is examined), an image folder (images + optional metadata.jsonl, `datasets`'
imagefolder layout) or a docfeed dataset, local or at a URL (s3://BUCKET/PREFIX, http(s)://...;
read where it is, as docfeed.Loader reads it: no disk is measured, the loader's time includes
the network, and the report adds what its remote reads cost). The report has three parts, one
module each:

1. What is stored (`stored`, pyarrow only, no `datasets` needed): columns and types, samples,
   bytes per sample, the total against this machine's RAM, and named pathologies (float32
   tensors stored as nested lists, padding baked in at preprocessing, no format set, huge rows,
   raw pixels).
2. Measured on a sample of the user's own data, within --max-seconds (default 60 s) (`measure`):
   the sequential read rate of a data file after asking the kernel to drop it from the page
   cache (posix_fadvise DONTNEED), the time per batch of the user's path (load_from_disk + a
   torch DataLoader with transformers' default_data_collator, at 0 and at N workers; for an
   image folder the on-the-fly path: datasets Image column + DonutImageProcessor), or, without
   datasets/torch, what pyarrow can measure (read + to_pylist); and (`measure_docfeed`)
   docfeed's time per batch on the same samples: the sample packed or migrated into a
   temporary directory, then docfeed.Loader run in this process at N threads with uint8
   output (what the GPU path copies) and no consumer, timed as `docfeed bench` times it.
3. The GPU's appetite (`gpu`): Donut-base training FLOPs per sample at the dataset's image size
   (`donut_base_train_flops`), divided by a sustained throughput (--gpu peak x --mfu, by
   default the fraction measured on an H200) or the user's --step-time; then (`estimate`) per
   pipeline the GPU's busy fraction, the epoch and job time and the fix. `report` holds the
   `Report` they all feed and writes it out.

Each part returns frozen dataclasses (`Stored`, `DiskRead`, `Measured`, `GpuEstimate`,
`Pipeline`, `Report`); `run` returns the Report, `main` prints it.

Contract: --json writes `Report.to_json()`, at least the keys `make demo` reads (path, kind,
samples, bytes_on_disk, bytes_per_sample, ram_bytes, image_size, pathologies [{id, message}],
disk_read_mb_s, gpu {step_s, source, device}, batch_size, epochs, assume_samples, pipelines
[{name, batch_s, stages, gpu_busy, epoch_s, job_s}], fix); more keys are allowed, these must
stay. Errors (not a dataset, a truncated or corrupt Arrow file, unreadable images) raise
DoctorError naming the path; `main` prints them and returns 1. Nothing is written outside a
temporary directory except --report and --json. The only process doctor starts is `docfeed
pack` for the sample (measure_docfeed.pack_sample_with_cli): always for a save_to_disk sample
(a migration, which docfeed.pack does not do in process yet), for an image folder only where
docfeed.pack cannot apply the Donut preset in process.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
from typing import Optional, Sequence, Tuple

from docfeed.doctor.common import (DEFAULT_SIZE, Budget, DoctorError, human_bytes,
                                   human_seconds, is_url, ram_bytes)
from docfeed.doctor.estimate import Pipeline, fix_text, model_pipeline
from docfeed.doctor.gpu import (DEFAULT_MFU, GPU_PEAK, DonutFlops, GpuEstimate, donut_base_flops,
                                donut_base_train_flops, estimate_step)
from docfeed.doctor.measure import (DiskRead, DocfeedSample, LoaderRun, Measured, Measurements,
                                    Sampling, measure_disk, measure_user)
from docfeed.doctor.measure_docfeed import measure_docfeed, run_loader
from docfeed.doctor.report import Report, render_markdown, render_text, write_chart
from docfeed.doctor.stored import (Column, Padding, Pathology, Stored, StoredSource,
                                   detect_kind, inspect, padding_of)

__all__ = [
    "Column", "DEFAULT_MFU", "DEFAULT_SIZE", "DiskRead", "DocfeedSample", "DoctorError",
    "DonutFlops", "GPU_PEAK", "GpuEstimate", "LoaderRun", "Measured", "Measurements", "Padding",
    "Pathology", "Pipeline", "Report", "Sampling", "Stored", "StoredSource", "detect_kind",
    "donut_base_flops", "donut_base_train_flops", "estimate_step", "fix_text", "human_bytes",
    "human_seconds", "inspect", "main", "measure_disk", "measure_docfeed", "measure_user",
    "model_pipeline", "padding_of", "parse_args", "ram_bytes", "render_markdown", "render_text",
    "remote_note", "run", "run_loader", "write_chart", "write_outputs",
]


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="docfeed doctor", description=(
        "Where is the input bottleneck of a Donut training job, and does "
        "dataloader_num_workers fix it? Measured on a sample of PATH."))
    ap.add_argument("path", help="a save_to_disk Dataset/DatasetDict, an image folder or a "
                    "docfeed dataset (local, or at an s3:// or http(s):// URL)")
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
                    help="sustained fraction of the GPU's peak (default 0.087: measured for the "
                    "recipe's Donut-base step on an H200)")
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


def _parse_size(text: Optional[str]) -> Tuple[int, int]:
    if not text:
        return DEFAULT_SIZE
    try:
        size = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        size = ()
    if len(size) != 2 or min(size) <= 0:
        raise DoctorError(f"--size must look like 1553x1200, not {text!r}")
    return size  # type: ignore[return-value]


def run(args: argparse.Namespace) -> Report:
    """The three parts on args.path (parse_args' namespace, not modified)."""
    budget = Budget(args.max_seconds)
    path = args.path if is_url(args.path) else pathlib.Path(args.path)
    kind = detect_kind(path)
    size = _parse_size(args.size)
    stored = inspect(path, kind, size, budget)
    assume = args.assume_samples or stored.samples
    batch, workers = args.batch_size, max(1, args.workers)
    k = min(stored.samples, args.samples or batch * max(2, workers))
    total_ram, avail_ram = ram_bytes()
    disk = measure_disk(stored.source.data_files, budget.share(0.08, floor=0.5))
    with tempfile.TemporaryDirectory(prefix="docfeed-doctor-") as tmp:
        # docfeed first: it is quick, and copying the sample warms the rows the user's path
        # then reads (the disk is modelled separately, see estimate.model_pipeline).
        big = stored.bytes_per_sample > (4 << 20)
        docfeed = measure_docfeed(stored, min(k, batch) if big else k, batch, workers, budget,
                                  pathlib.Path(tmp))
        user = measure_user(stored, k, batch, workers, budget)
    measured = user.pipelines + docfeed.pipelines
    notes = list(docfeed.notes + user.notes)
    if is_url(path):
        notes += [remote_note(m.docfeed.bench) for m in docfeed.pipelines if m.docfeed]
    scaled = [m for m in measured if (m.measured_batch_size or batch) < batch]
    if scaled:
        notes.append("time box: " + "; ".join(
            f"{m.name} measured on batches of {m.measured_batch_size}, scaled to {batch}"
            for m in scaled) + " (costs are linear in the samples; raise --max-seconds for "
            "whole batches)")
    image_size = stored.image_size or (size if kind != "save_to_disk" else None)
    gpu = estimate_step(batch, image_size or DEFAULT_SIZE, args.gpu, args.mfu, args.step_time)
    if gpu.flops is not None and image_size is None:
        notes.append(f"image size unknown: GPU cost computed at {DEFAULT_SIZE[0]}x"
                     f"{DEFAULT_SIZE[1]}")
    pipes = tuple(model_pipeline(m, stored.bytes_per_sample, disk.cold_mb_s, gpu.step_s, batch,
                                 assume, args.epochs, avail_ram or total_ram) for m in measured)
    projected = stored.bytes_per_sample * assume
    return Report(
        path=str(path), kind=kind, split=stored.split, splits=stored.splits,
        samples=stored.samples, bytes_on_disk=stored.bytes_on_disk, ram_bytes=total_ram,
        ram_available_bytes=avail_ram, projected_bytes=projected,
        page_cache_holds=projected < (avail_ram or total_ram), image_size=image_size,
        columns=stored.columns, pathologies=stored.pathologies, disk=disk, gpu=gpu,
        batch_size=batch, epochs=args.epochs, assume_samples=assume, workers=workers,
        sample_rows=k, pipelines=pipes,
        fix=fix_text(pipes, stored, assume, args.epochs, gpu.step_s),
        notes=tuple(notes) + stored.notes, elapsed_s=budget.elapsed())


def remote_note(run: LoaderRun) -> str:
    """What reading a URL cost the loader's run: its HTTP traffic and how long the workers
    waited for bytes, with what to do when that wait dominates."""
    http, remote = run.http, run.stats.get("remote", {})
    wall = max(run.seconds + run.first_batch_s, 1e-9)
    wait_s = remote.get("fetch_wait", {}).get("nanos", 0) / 1e9 / max(run.threads, 1)
    fetched, used = remote.get("bytes_fetched", 0), remote.get("bytes_used", 0)
    text = (f"remote reads: {http.get('requests', 0):,} HTTP requests, "
            f"{human_bytes(http.get('bytes', 0))} received ({http.get('bytes', 0) / wall / 1e6:.0f}"
            f" MB/s over the run), {http.get('retries', 0)} retries, "
            f"{http.get('throttled', 0)} throttled")
    if remote.get("prefetching"):
        text += (f"; the range prefetcher fetched {human_bytes(fetched)} for "
                 f"{human_bytes(used)} used, and each worker waited {wait_s:.2f} s for bytes "
                 f"({wait_s / wall:.0%} of the run)")
        if wait_s > 0.25 * wall:
            text += (": the network limits this loader; more requests in flight "
                     "(Loader(prefetch_requests=)) hide more latency, and a local cache "
                     "(Loader(cache_dir=)) serves every later epoch from disk")
    return text


def write_outputs(report: Report, report_dir: Optional[str], json_path: Optional[str]) -> None:
    """--report DIR (report.md and doctor.png) and --json FILE (Report.to_json())."""
    if report_dir:
        out = pathlib.Path(report_dir)
        out.mkdir(parents=True, exist_ok=True)
        chart = "doctor.png" if write_chart(report, out / "doctor.png") else None
        (out / "report.md").write_text(render_markdown(report, chart), encoding="utf-8")
        print(f"report: {out / 'report.md'}" + (f", chart {out / chart}" if chart else
                                                 " (chart skipped: matplotlib not importable)"))
    if json_path:
        pathlib.Path(json_path).write_text(json.dumps(report.to_json(), indent=2) + "\n",
                                           encoding="utf-8")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        report = run(args)
    except DoctorError as e:
        print(f"docfeed doctor: {e}", file=sys.stderr)
        return 1
    print(render_text(report), end="")
    write_outputs(report, args.report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The report of `docfeed doctor`: the `Report` every part feeds, its JSON (--json: the keys
`make demo` and users read, written by `Report.to_json` and read back by `Report.from_json`),
the text printed, the Markdown of --report and its chart."""
from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from docfeed.doctor.common import DEFAULT_SIZE, human_bytes, human_seconds, is_url
from docfeed.doctor.estimate import Pipeline
from docfeed.doctor.gpu import GpuEstimate
from docfeed.doctor.measure import DiskRead
from docfeed.doctor.stored import Column, Pathology


@dataclass(frozen=True)
class Report:
    """Everything doctor found, as reported (nothing here is needed to measure again)."""

    path: str
    kind: str
    split: Optional[str]
    splits: Tuple[str, ...]
    samples: int
    bytes_on_disk: int
    ram_bytes: int
    ram_available_bytes: int
    projected_bytes: float  # bytes per sample x assume_samples
    page_cache_holds: bool
    image_size: Optional[Tuple[int, int]]
    columns: Tuple[Column, ...]
    pathologies: Tuple[Pathology, ...]
    disk: DiskRead
    gpu: GpuEstimate
    batch_size: int
    epochs: int
    assume_samples: int
    workers: int
    sample_rows: int
    pipelines: Tuple[Pipeline, ...]
    fix: str
    notes: Tuple[str, ...]
    elapsed_s: float

    @property
    def bytes_per_sample(self) -> float:
        return self.bytes_on_disk / self.samples if self.samples else 0.0

    @property
    def disk_read_mb_s(self) -> float:
        return self.disk.cold_mb_s

    def to_json(self) -> Dict[str, Any]:
        """The --json object. Contract: at least path, kind, samples, bytes_on_disk,
        bytes_per_sample, ram_bytes, image_size, pathologies [{id, message}], disk_read_mb_s,
        gpu {step_s, source, device}, batch_size, epochs, assume_samples, pipelines [{name,
        batch_s, stages, gpu_busy, epoch_s, job_s}], fix."""
        return {
            "path": self.path, "kind": self.kind, "split": self.split, "splits": list(self.splits),
            "samples": self.samples, "bytes_on_disk": self.bytes_on_disk,
            "bytes_per_sample": self.bytes_per_sample, "ram_bytes": self.ram_bytes,
            "ram_available_bytes": self.ram_available_bytes,
            "projected_bytes": self.projected_bytes, "page_cache_holds": self.page_cache_holds,
            "image_size": list(self.image_size) if self.image_size else None,
            "columns": [c.to_json() for c in self.columns],
            "pathologies": [p.to_json() for p in self.pathologies],
            "disk_read_mb_s": self.disk_read_mb_s, "disk": self.disk.to_json(),
            "gpu": self.gpu.to_json(), "batch_size": self.batch_size, "epochs": self.epochs,
            "assume_samples": self.assume_samples, "workers": self.workers,
            "sample_rows": self.sample_rows, "pipelines": [p.to_json() for p in self.pipelines],
            "fix": self.fix, "notes": list(self.notes), "elapsed_s": self.elapsed_s,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Report":
        """A report read back from its JSON (bytes_per_sample and disk_read_mb_s are derived)."""
        return cls(
            path=d["path"], kind=d["kind"], split=d["split"], splits=tuple(d["splits"]),
            samples=int(d["samples"]), bytes_on_disk=int(d["bytes_on_disk"]),
            ram_bytes=int(d["ram_bytes"]), ram_available_bytes=int(d["ram_available_bytes"]),
            projected_bytes=d["projected_bytes"], page_cache_holds=bool(d["page_cache_holds"]),
            image_size=tuple(d["image_size"]) if d["image_size"] else None,  # type: ignore
            columns=tuple(Column.from_json(c) for c in d["columns"]),
            pathologies=tuple(Pathology.from_json(p) for p in d["pathologies"]),
            disk=DiskRead.from_json(d["disk"]), gpu=GpuEstimate.from_json(d["gpu"]),
            batch_size=int(d["batch_size"]), epochs=int(d["epochs"]),
            assume_samples=int(d["assume_samples"]), workers=int(d["workers"]),
            sample_rows=int(d["sample_rows"]),
            pipelines=tuple(Pipeline.from_json(p) for p in d["pipelines"]), fix=d["fix"],
            notes=tuple(d["notes"]), elapsed_s=float(d["elapsed_s"]))


def _split_text(r: Report, fmt: str) -> str:
    return fmt.format(r.split, ", ".join(r.splits)) if r.split else ""


def render_text(r: Report) -> str:
    lines = [f"docfeed doctor: {r.path} ({r.kind}" + _split_text(r, ", split {} of {}") + ")", ""]
    lines.append("1. What is stored")
    lines.append(f"   samples {r.samples:,}, {human_bytes(r.bytes_on_disk)} "
                 f"{'stored' if is_url(r.path) else 'on disk'}, "
                 f"{human_bytes(r.bytes_per_sample)} per sample"
                 + (f", image {r.image_size[0]}x{r.image_size[1]}" if r.image_size else ""))
    for c in r.columns:
        lines.append(f"   column {c.name}: {c.type}")
    lines.append(f"   RAM {human_bytes(r.ram_bytes)} ({human_bytes(r.ram_available_bytes)} "
                 f"available): the page cache {'will' if r.page_cache_holds else 'will NOT'} "
                 f"hold {human_bytes(r.projected_bytes)} "
                 f"({r.assume_samples:,} samples like these)")
    for p in r.pathologies or (Pathology("none", "no known pathology found"),):
        lines.append(f"   [{p.id}] {p.message}")
    lines += ["", "2. Measured on a sample of this data"]
    if is_url(r.path):
        lines.append("   disk: none (read over the network; see the remote reads below)")
    else:
        warm_note = (" (likely served from the page cache: a warm figure)" if r.disk.likely_warm
                     else " (page cache dropped with posix_fadvise first)")
        lines.append(f"   disk read {r.disk_read_mb_s:.0f} MB/s sequential{warm_note}; "
                     f"warm re-read {r.disk.warm_mb_s:.0f} MB/s")
    for p in r.pipelines:
        stages = ", ".join(f"{k} {human_seconds(v)}" for k, v in p.stages.items())
        lines.append(f"   {p.name:<44} {human_seconds(p.batch_s):>9} per batch of "
                     f"{r.batch_size}  ({stages})")
    for note in r.notes:
        lines.append(f"   note: {note}")
    g = r.gpu
    lines += ["", "3. GPU appetite"]
    if g.flops is not None:
        h, w = r.image_size or DEFAULT_SIZE  # unknown: computed at the default (see the notes)
        lines.append(f"   Donut-base training: {g.flops.train / 1e12:.2f} TFLOP per "
                     f"sample at {h}x{w} (forward: encoder "
                     f"{g.flops.encoder_forward / 1e12:.2f}, decoder "
                     f"{g.flops.decoder_forward / 1e12:.2f}); {g.device}")
    lines.append(f"   GPU step: {human_seconds(g.step_s)} per batch of {r.batch_size} "
                 f"({g.source}); input and compute assumed to overlap (prefetching)")
    lines.append(f"   {'pipeline':<44} {'batch':>9} {'GPU busy':>9} {'epoch':>9} "
                 f"{'job (' + str(r.epochs) + ' ep)':>11}")
    for p in r.pipelines:
        lines.append(f"   {p.name:<44} {human_seconds(p.batch_s):>9} "
                     f"{p.gpu_busy:>9.1%} {human_seconds(p.epoch_s):>9} "
                     f"{human_seconds(p.job_s):>11}")
    lines += ["", f"Fix: {r.fix}", f"(doctor took {r.elapsed_s:.1f} s)"]
    return "\n".join(lines) + "\n"


def render_markdown(r: Report, chart: Optional[str]) -> str:
    md = [f"# docfeed doctor: `{r.path}`", "", f"Kind: {r.kind}"
          + _split_text(r, " (split `{}` of {})") + ".", "",
          "## What is stored", "",
          f"{r.samples:,} samples, {human_bytes(r.bytes_on_disk)} on disk, "
          f"{human_bytes(r.bytes_per_sample)} per sample. RAM {human_bytes(r.ram_bytes)}: "
          f"the page cache {'will' if r.page_cache_holds else 'will not'} hold "
          f"{human_bytes(r.projected_bytes)} ({r.assume_samples:,} samples).", "",
          "| column | type |", "|---|---|"]
    md += [f"| `{c.name}` | {c.type} |" for c in r.columns]
    md += ["", "Pathologies:", ""]
    md += [f"* **{p.id}**: {p.message}" for p in r.pathologies] or ["* none found"]
    md += ["", "## Measured (a sample of this data)", "",
           ("Disk: none (read over the network; see the remote reads in the notes)."
            if is_url(r.path) else f"Disk read: {r.disk_read_mb_s:.0f} MB/s sequential"
            + (" (likely a warm-cache figure)" if r.disk.likely_warm else " (cold)") + "."), "",
           f"| pipeline | s per batch of {r.batch_size} | stages (s) | GPU busy | epoch | "
           f"job ({r.epochs} epochs) |", "|---|---:|---|---:|---:|---:|"]
    for p in r.pipelines:
        stages = ", ".join(f"{k} {v:.3g}" for k, v in p.stages.items())
        md.append(f"| {p.name} | {p.batch_s:.3g} | {stages} | {p.gpu_busy:.1%} | "
                  f"{human_seconds(p.epoch_s)} | {human_seconds(p.job_s)} |")
    g = r.gpu
    md += ["", "## GPU", "", f"Step {g.step_s:.3g} s per batch ({g.source}; {g.device})."
           + (f" Donut-base: {g.flops.train / 1e12:.2f} TFLOP per training sample."
              if g.flops is not None else ""), "",
           "Assumption: input and compute overlap, so a step takes max(GPU step, batch time).", ""]
    md += [f"* note: {n}" for n in r.notes]
    md += ["", "## Fix", "", r.fix, ""]
    if chart:
        md += [f"![time per batch by stage]({chart})", ""]
    else:
        md += ["(chart skipped: matplotlib is not importable)", ""]
    return "\n".join(md)


def write_chart(r: Report, path: pathlib.Path) -> bool:
    """Time per batch by stage for each pipeline against the GPU step (log scale). False when
    matplotlib is not importable."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    pipes = r.pipelines
    step = r.gpu.step_s
    fig, ax = plt.subplots(figsize=(10, 1.4 + 0.7 * max(len(pipes), 1)))
    colours: Dict[str, Any] = {}
    palette = plt.get_cmap("tab10").colors
    # Log scale (the pipelines differ by orders of magnitude): a bar spans [xmin, batch_s] and
    # its stages split that span in proportion to their share of the batch time.
    xmin = min([step] + [p.batch_s for p in pipes]) / 4
    for y, p in enumerate(pipes):
        total = sum(p.stages.values()) or 1.0
        done = 0.0
        for stage, v in p.stages.items():
            c = colours.setdefault(stage, palette[len(colours) % len(palette)])
            x0 = xmin * (p.batch_s / xmin) ** (done / total)
            done += v
            x1 = xmin * (p.batch_s / xmin) ** (done / total)
            ax.barh(y, x1 - x0, left=x0, color=c,
                    label=stage if stage not in ax.get_legend_handles_labels()[1] else None)
        ax.text(p.batch_s * 1.08, y, human_seconds(p.batch_s), va="center", fontsize=8)
    ax.set_xlim(xmin, max([step] + [p.batch_s for p in pipes]) * 3)
    ax.axvline(step, color="black", linestyle="--", label=f"GPU step {human_seconds(step)}")
    ax.set_yticks(range(len(pipes)))
    ax.set_yticklabels([p.name for p in pipes], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(f"seconds per batch of {r.batch_size} (log scale)")
    ax.set_title("docfeed doctor: time per batch (stages: share of each bar) vs the GPU's step",
                 fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True

"""Part 3 of `docfeed doctor`, the verdict: each measured pipeline with the disk and the GPU
modelled in (`model_pipeline`: GPU busy fraction, epoch and job time), and the fix."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Sequence

from docfeed.doctor.common import DEFAULT_SIZE, Stages, human_bytes, human_seconds, stages_json
from docfeed.doctor.measure import Measured
from docfeed.doctor.stored import Stored


@dataclass(frozen=True)
class Pipeline:
    """A measured pipeline at the job's scale: batch_s and stages with the modelled disk read
    added (when the page cache cannot hold the data), whether the page cache holds it, the GPU's
    busy fraction, and the seconds per epoch and for the job."""

    measured: Measured
    batch_s: float
    stages: Stages
    page_cache_holds: bool
    gpu_busy: float
    epoch_s: float
    job_s: float

    @property
    def name(self) -> str:
        return self.measured.name

    @property
    def kind(self) -> str:
        return self.measured.kind

    @property
    def workers(self) -> int:
        return self.measured.workers

    def to_json(self) -> Dict[str, Any]:
        out = self.measured.to_json()
        out.update(batch_s=self.batch_s, stages=stages_json(self.stages),
                   page_cache_holds=self.page_cache_holds, gpu_busy=self.gpu_busy,
                   epoch_s=self.epoch_s, job_s=self.job_s)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Pipeline":
        """A report's pipeline read back. The JSON keeps the modelled times only, so `measured`
        carries them too."""
        return cls(measured=Measured.from_json(d), batch_s=float(d["batch_s"]),
                   stages=dict(d["stages"]), page_cache_holds=bool(d["page_cache_holds"]),
                   gpu_busy=float(d["gpu_busy"]), epoch_s=float(d["epoch_s"]),
                   job_s=float(d["job_s"]))


def model_pipeline(m: Measured, bytes_per_sample: float, disk_mb_s: float, step_s: float,
                   batch_size: int, assume_samples: int, epochs: int,
                   ram_available: int) -> Pipeline:
    """The measured pipeline `m` at the job's scale.

    Disk: measurements read warm pages; when the dataset (at assume_samples, with this
    pipeline's bytes per sample: docfeed's packed size, else the stored one) does not fit in the
    page cache, every epoch reads it from disk, so a batch also costs its bytes at the measured
    cold rate: in series with the work at 0 workers (the training process reads), in parallel
    with it otherwise (workers/threads prefetch; then the slower of the two counts).
    GPU: input and compute overlap (prefetching), so a step takes max(step, batch_s)."""
    bps = m.docfeed.bytes_per_sample if m.docfeed is not None else bytes_per_sample
    fits = bps * assume_samples < ram_available
    disk = 0.0 if fits or disk_mb_s <= 0 else batch_size * bps / (disk_mb_s * 1e6)
    batch_s, stages = m.batch_s, dict(m.stages)
    if m.workers == 0:
        batch_s = m.batch_s + disk
        if disk:
            stages = {"disk read": disk, **stages}
    elif disk > m.batch_s:
        batch_s, stages = disk, {"disk read": disk}
    epoch_s = math.ceil(assume_samples / batch_size) * max(step_s, batch_s)
    return Pipeline(measured=m, batch_s=batch_s, stages=stages, page_cache_holds=fits,
                    gpu_busy=step_s / max(step_s, batch_s), epoch_s=epoch_s,
                    job_s=epochs * epoch_s)


def fix_text(pipes: Sequence[Pipeline], stored: Stored, assume_samples: int, epochs: int,
             step_s: float) -> str:
    user = [p for p in pipes if p.kind == "user"]
    doc = [p for p in pipes if p.kind == "docfeed"]
    if not doc:
        return "docfeed's path could not be measured here (see the notes)."
    d = doc[0]
    facts = d.measured.docfeed
    if not user:
        return (f"already docfeed: {d.name} gives a batch in {human_seconds(d.batch_s)}, "
                f"GPU busy {d.gpu_busy:.0%}; job {human_seconds(d.job_s)}.")
    base = user[0]
    size = stored.image_size or DEFAULT_SIZE
    how = (f"migrate once with `docfeed pack {stored.path} -o OUT`"
           if stored.kind == "save_to_disk" and stored.source.image_column is None
           else f"pack once with `docfeed pack {stored.path} -o OUT --preprocess donut --size "
                f"{size[0]}x{size[1]}`")
    one_time = (facts.pack_s_per_sample if facts else 0.0) * assume_samples
    text = (f"{how}"
            + (f" (at most ~{human_seconds(one_time)} for {assume_samples:,} samples at "
               f"the rate of this machine's {facts.sample_rows}-sample run, start-up "
               f"included; {human_bytes(facts.bytes_per_sample * assume_samples)} instead of "
               f"{human_bytes(stored.bytes_per_sample * assume_samples)})"
               if one_time and facts else "")
            + f" and train with docfeed.Loader / docfeed.hf.Seq2SeqTrainer: "
            f"{epochs} epoch(s) in {human_seconds(d.job_s)} instead of "
            f"{human_seconds(base.job_s)} ({base.job_s / d.job_s:.1f}x faster, GPU busy "
            f"{d.gpu_busy:.0%} instead of {base.gpu_busy:.1%}).")
    workers = [p for p in user if p.workers > 0]
    if workers:
        w = workers[0]
        n = w.workers
        # Perfect scaling: n workers each build a batch in the 0-worker time.
        ideal = base.batch_s / n
        ideal_busy = min(1.0, step_s / ideal) if ideal > 0 else 1.0
        gain = base.job_s / w.job_s
        text += (f" dataloader_num_workers={n} alone gives {human_seconds(w.job_s)} here "
                 f"({gain:.1f}x, GPU busy {w.gpu_busy:.1%}"
                 + ("; no gain on this machine, whose cores the workers share with the training "
                    "process and other load" if gain < 1.05 else "")
                 + f"); perfect scaling over {n} workers would give a GPU busy {ideal_busy:.1%}"
                 + (": workers divide the cost of the Python objects between processes (and "
                    "multiply the RAM they hold) but do not remove it." if ideal_busy < 0.9 else
                    f", if {n} cores are free for them besides the training process."))
    return text

"""Part 3's GPU side: Donut-base training FLOPs per sample and the step time they imply.

`donut_base_flops` counts the matrix products of one training sample from the architecture;
`estimate_step` turns them into seconds per step of --batch-size samples at a sustained
throughput (--gpu peak x --mfu, by default the fraction measured for the recipe's step on an
H200), unless the user measured the step (--step-time)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

# Dense bf16/fp16 tensor-core peaks from the vendors' datasheets (SXM parts), FLOP/s.
GPU_PEAK = {"h100": 989e12, "h200": 989e12, "a100": 312e12}
# The sustained fraction of peak measured for Donut-base training as the recipe runs it
# (transformers' eager PyTorch, bf16 autocast, fp32 AdamW, batch 8 at 1553x1200, fed by
# docfeed.Loader(device="cuda")): 331 ms a step on an H200, i.e. 8 x 3.56 TFLOP / 0.331 s =
# 86 TFLOP/s, 8.7 % of 989 (bench/gpu/gpu_check.py; docs/benchmarks.md "On a GPU"). Windowed
# attention and many small kernels keep it far below the dense matrix-product peak.
DEFAULT_MFU = 0.087


@dataclass(frozen=True)
class DonutFlops:
    """FLOPs of one Donut-base sample: the forward pass of each half, the whole forward and
    training (forward + backward = 3 x forward)."""

    encoder_forward: float
    decoder_forward: float
    forward: float
    train: float

    def to_json(self) -> Dict[str, float]:
        return {"encoder_forward": self.encoder_forward, "decoder_forward": self.decoder_forward,
                "forward": self.forward, "train": self.train}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "DonutFlops":
        return cls(float(d["encoder_forward"]), float(d["decoder_forward"]), float(d["forward"]),
                   float(d["train"]))


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


def donut_base_flops(height: int, width: int, target_length: int = 512,
                     vocab: int = 57580) -> DonutFlops:
    """FLOPs of one Donut-base training sample (forward + backward) at height x width.

    Architecture (docs/context.md section 3): DonutSwin encoder, patch 4, embed 128, depths
    [2, 2, 14, 2], window 10, channels doubling per stage (patch merging: the grid is padded to
    even sides, then 4C -> 2C on the merged tokens); MBart decoder, 4 layers, d_model 1024, FFN
    4096, `target_length` tokens (the recipe pads labels to 512), cross-attention over the
    encoder's last-stage tokens, LM head over `vocab` tokens (cord-v2: 57,580).
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
    return DonutFlops(encoder_forward=2.0 * enc, decoder_forward=2.0 * dec, forward=forward,
                      train=3.0 * forward)


def donut_base_train_flops(height: int, width: int, target_length: int = 512,
                           vocab: int = 57580) -> Dict[str, float]:
    """donut_base_flops as a dict (keys encoder_forward, decoder_forward, forward, train)."""
    return donut_base_flops(height, width, target_length, vocab).to_json()


@dataclass(frozen=True)
class GpuEstimate:
    """Seconds per training step of batch_size samples, and where the figure comes from:
    source "step-time" (the user's measurement) or "donut-base-flops" (the FLOP model, with the
    FLOPs, the peak and the MFU it assumed)."""

    step_s: float
    source: str
    device: str
    flops: Optional[DonutFlops] = None
    peak_flops: Optional[float] = None
    mfu: Optional[float] = None

    @property
    def train_flops_per_sample(self) -> Optional[float]:
        return self.flops.train if self.flops is not None else None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"step_s": self.step_s, "source": self.source,
                               "device": self.device}
        if self.flops is not None:
            out.update(train_flops_per_sample=self.flops.train,
                       forward_flops=self.flops.to_json(), peak_flops=self.peak_flops,
                       mfu=self.mfu)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "GpuEstimate":
        flops = DonutFlops.from_json(d["forward_flops"]) if "forward_flops" in d else None
        return cls(step_s=float(d["step_s"]), source=d["source"], device=d["device"],
                   flops=flops, peak_flops=d.get("peak_flops"), mfu=d.get("mfu"))


def estimate_step(batch_size: int, size: Tuple[int, int], gpu: str = "h100",
                  mfu: float = DEFAULT_MFU, step_time: Optional[float] = None) -> GpuEstimate:
    """The GPU's seconds per step of batch_size samples at size (H, W)."""
    if step_time is not None:
        return GpuEstimate(step_s=step_time, source="step-time",
                           device="the user's GPU (--step-time)")
    flops = donut_base_flops(*size)
    peak = GPU_PEAK[gpu]
    return GpuEstimate(
        step_s=flops.train * batch_size / (peak * mfu), source="donut-base-flops",
        device=f"{gpu.upper()} at {mfu:.1%} of its {peak / 1e12:.0f} TFLOP/s dense bf16/fp16 "
               + ("peak (as measured for the recipe's Donut-base step on an H200)"
                  if mfu == DEFAULT_MFU else "peak (--mfu)"),
        flops=flops, peak_flops=peak, mfu=mfu)

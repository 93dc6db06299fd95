"""The CUDA stage of docfeed.Loader and the table normalization it runs.

normalize(): uint8 pixels -> float through the C++ loader's exact 3 x 256 float32 table
(docfeed._docfeed.normalize_table: Preset::NormalizeTable of docfeed/preprocess.h). A lookup
involves no arithmetic, so on any device it gives the C++ float32 path's bits; float16/bfloat16
are that float32 rounded to nearest-even by torch's .to(), as the C++ tables are. Tested on CPU
tensors (tests/python/test_loader_tensors.py); bench/gpu/gpu_check.py checks it on a GPU.

GpuStage: per batch, on a side stream, copies the uint8 HWC pixels from the pinned pool buffer
to the GPU (non_blocking) and normalizes them there into the requested layout (the C++ loader's
uint8 HWC output is row copies, measured 1.6-1.8x less CPU per page than its uint8 CHW
de-interleave); the consumer's stream waits on an event, and the
host buffer (the docfeed Batch) is kept referenced until that event has completed, so the
loader cannot refill it while the copy reads it.
"""
from __future__ import annotations

import collections
from typing import Any, Optional, Tuple

from docfeed import _docfeed

_TABLE_CACHE: dict = {}


def normalize_table(device: Any = "cpu", rescale_factor: float = 1.0 / 255.0,
                    mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), hf_version: int = 4,
                    backend: str = "pil"):
    """The (3, 256) float32 table of the C++ loader, as a torch tensor on `device` (the
    torchvision backend of transformers 5 rounds its fused rescale/normalize differently)."""
    import torch

    key = (str(device), rescale_factor, tuple(mean), tuple(std), hf_version, backend)
    table = _TABLE_CACHE.get(key)
    if table is None:
        flat = _docfeed.normalize_table(rescale_factor=rescale_factor, mean=list(mean),
                                        std=list(std), hf_version=hf_version, backend=backend)
        table = torch.tensor(flat, dtype=torch.float32).view(3, 256).to(device)
        _TABLE_CACHE[key] = table
    return table


def _channel(t, layout: str, c: int):
    return t[:, c] if layout == "chw" else t[..., c]


def to_layout(pixels, layout: str, out_layout: str):
    """(B, 3, H, W) <-> (B, H, W, 3): a contiguous copy when the layouts differ."""
    if layout == out_layout:
        return pixels
    perm = (0, 3, 1, 2) if layout == "hwc" else (0, 2, 3, 1)
    return pixels.permute(*perm).contiguous()


def normalize(pixels, table, dtype: Any = None, layout: str = "chw",
              out_layout: Optional[str] = None):
    """uint8 (B, 3, H, W) ("chw") or (B, H, W, 3) ("hwc") -> float32 (then `dtype`) by table
    lookup, on pixels' device, in `out_layout` (default: `layout`; the gather reads one layout
    and writes the other, so converting costs no extra pass). table: (3, 256) float32 on the
    same device."""
    import torch

    if pixels.dtype != torch.uint8:
        raise TypeError(f"normalize needs uint8 pixels, got {pixels.dtype}")
    out_layout = out_layout or layout
    b = pixels.shape[0]
    h, w = (pixels.shape[2], pixels.shape[3]) if layout == "chw" else pixels.shape[1:3]
    shape = (b, 3, h, w) if out_layout == "chw" else (b, h, w, 3)
    out = torch.empty(shape, dtype=torch.float32, device=pixels.device)
    for c in range(3):
        src = _channel(pixels, layout, c)
        dst = _channel(out, out_layout, c)
        # index_select over the flattened values: one gather, no arithmetic.
        dst.copy_(table[c].index_select(0, src.reshape(-1).to(torch.int32)).view(src.shape))
    if dtype is not None and dtype != torch.float32:
        out = out.to(dtype)
    return out


class GpuStage:
    """Moves batches to a CUDA device (see the module docstring). One per Loader."""

    @staticmethod
    def create(device: Any, dtype_name: str, layout: str, max_held: int) -> Optional["GpuStage"]:
        if device is None:
            return None
        import torch

        device = torch.device(device)
        if device.type == "cpu":
            return None
        if device.type != "cuda":
            raise ValueError(f"device must be None, 'cpu' or a CUDA device, not {device}")
        if not torch.cuda.is_available():
            raise RuntimeError("device='cuda' but torch.cuda.is_available() is False")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        return GpuStage(device, getattr(torch, dtype_name), layout, max_held)

    def __init__(self, device, dtype, layout: str, max_held: int) -> None:
        import torch

        self.device = device
        self.dtype = dtype
        self.layout = layout
        self.max_held = max_held
        self.stream = torch.cuda.Stream(device=device)
        self.table = normalize_table(device)  # 0.5 / 0.5 until set_normalization()
        # (event, docfeed batch, host views) per copy still possibly reading a host buffer.
        self.in_flight: collections.deque = collections.deque()

    def set_normalization(self, mean, std, hf_version: int = 4, backend: str = "pil") -> None:
        """Normalizes with this per-channel mean/std (and processor generation/backend) from now
        on (the C++ loader's, so both paths build the same table)."""
        self.table = normalize_table(self.device, mean=tuple(mean), std=tuple(std),
                                     hf_version=hf_version, backend=backend)

    @staticmethod
    def pinned_allocator(nbytes: int):
        """The loader's buffer allocator: page-locked host memory from torch's caching host
        allocator (page aligned, so 64-byte aligned as the loader requires)."""
        import torch

        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    def reap(self, block: bool = False) -> None:
        """Drops the host batches whose copies have completed (the oldest first)."""
        while self.in_flight:
            event = self.in_flight[0][0]
            if not event.query():
                if not block:
                    return
                event.synchronize()
            self.in_flight.popleft()

    def drain(self) -> None:
        self.reap(block=True)

    def transfer(self, raw) -> Tuple[Any, Any]:
        """Starts the copy + normalization of docfeed batch `raw`; returns (pixel_values, labels)
        on the device, ready for use on the current stream."""
        import torch

        self.reap()
        while len(self.in_flight) >= self.max_held:
            event = self.in_flight[0][0]
            event.synchronize()
            self.in_flight.popleft()
        host_pixels = raw.pixels()  # uint8, pinned
        host_labels = raw.labels()
        consumer = torch.cuda.current_stream(self.device)
        with torch.cuda.stream(self.stream):
            # The side stream must not overwrite memory the consumer may still read (tensors
            # of earlier batches freed into the caching allocator are reused safely because
            # record_stream below ties them to the consumer's stream).
            self.stream.wait_stream(consumer)
            wire = torch.empty(host_pixels.shape, dtype=torch.uint8, device=self.device)
            wire.copy_(host_pixels, non_blocking=True)
            labels = None
            if host_labels is not None:
                labels = torch.empty(host_labels.shape, dtype=torch.int64, device=self.device)
                labels.copy_(host_labels, non_blocking=True)
            # The host batch is HWC (the C++ loader's cheapest uint8 output: row copies of the
            # stored pixels); the device reorders it while it normalizes.
            if self.dtype == torch.uint8:
                pixels = to_layout(wire, "hwc", self.layout)
            else:
                pixels = normalize(wire, self.table, self.dtype, "hwc", self.layout)
            event = torch.cuda.Event()
            event.record(self.stream)
        consumer.wait_event(event)
        pixels.record_stream(consumer)
        if labels is not None:
            labels.record_stream(consumer)
        self.in_flight.append((event, raw, host_pixels, host_labels))
        return pixels, labels

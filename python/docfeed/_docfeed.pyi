"""Type stubs of the nanobind extension (python/src/docfeed_ext.cc). Internal: use docfeed.Loader."""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

class Batch:
    @property
    def valid(self) -> bool: ...
    @property
    def size(self) -> int: ...
    @property
    def epoch(self) -> int: ...
    @property
    def index(self) -> int: ...
    @property
    def buffer_index(self) -> int: ...
    @property
    def label_length(self) -> int: ...
    @property
    def resume_state(self) -> Dict[str, Any]: ...  # seed, epoch, position, world_size, batch_size, elastic
    def pixels(self) -> torch.Tensor: ...
    def labels(self) -> Optional[torch.Tensor]: ...
    # Token column k (the loader's token_columns order), (size, longest row) int64 padded with
    # the column's value; None for k past the last column.
    def tokens(self, k: int) -> Optional[torch.Tensor]: ...
    def sample_ids(self) -> torch.Tensor: ...
    def pad_offsets(self) -> torch.Tensor: ...
    def content_sizes(self) -> torch.Tensor: ...
    def release(self) -> None: ...

class Loader:
    # Integers are range-checked (docfeed.InvalidArgumentError, a ValueError, naming the
    # parameter and its range); image_mean/image_std override the dataset's normalization;
    # allocator: None or Callable[[int], tensor] (pinned host buffers for the GPU stage).
    # preset: "donut", "nougat" (height/width, align_long_axis and hf_version are its size,
    # do_align_long_axis and generation; backend "pil" only), "qwen2-vl" or "qwen2.5-vl".
    def __init__(self, path: str, *, height: int = 2560, width: int = 1920,
                 align_long_axis: bool = False, hf_version: int = 4, backend: str = "pil",
                 batch_size: int = 8, shuffle: bool = True,
                 seed: int = 0, pad: str = "random", dtype: str = "float32", layout: str = "chw",
                 rank: int = 0, world_size: int = 1, remainder: str = "drop",
                 num_threads: int = 0, prefetch: int = 4, max_held: int = 2,
                 label_column: str = "", label_length: int = 0, on_error: str = "raise",
                 max_bad_samples: int = 100,
                 image_mean: Optional[Tuple[float, float, float]] = None,
                 image_std: Optional[Tuple[float, float, float]] = None,
                 allocator: Optional[Callable[[int], Any]] = None, preset: str = "donut",
                 min_pixels: int = 3136, max_pixels: int = 12845056, patch_size: int = 14,
                 temporal_patch_size: int = 2, merge_size: int = 2,
                 range_prefetch: str = "auto", prefetch_bytes: int = 67108864,
                 prefetch_requests: int = 8,
                 token_columns: List[Tuple[str, int]] = [],
                 token_capacity: int = 0, cache_dir: str = "", cache_limit: int = 0) -> None: ...
    @property
    def num_samples(self) -> int: ...
    @property
    def num_batches(self) -> int: ...
    @property
    def preprocessed(self) -> bool: ...
    @property
    def image_mean(self) -> List[float]: ...
    @property
    def image_std(self) -> List[float]: ...
    @property
    def batch_pixel_bytes(self) -> int: ...
    def start_epoch(self, epoch: int, position: int = 0) -> None: ...
    def restore(self, seed: int, epoch: int, position: int, world_size: int = 0,
                batch_size: int = 0, elastic: Optional[str] = None) -> None: ...
    def state(self) -> Dict[str, Any]: ...  # as Batch.resume_state
    def stats(self) -> Dict[str, Any]: ...
    def stats_json(self) -> str: ...
    def next(self) -> Optional[Batch]: ...
    def close(self) -> None: ...

# The keys of Loader.stats(): every field of the C++ LoaderStats, in declaration order.
STATS_FIELDS: Tuple[str, ...]

# The manifest's facts without starting a loader: path, num_samples, columns [(name, type)],
# label_column, codec, compression, stored_codecs, source_bytes, stored_image_bytes, total_bytes
# (every file the manifest lists), rejected, preprocess (None or {preset, height, width, align_long_axis, hf_version, backend}, with
# longest_edge, max_image_size, do_image_splitting for preset "idefics3"),
# original_column, chat_labels (the manifest's JSON object text, "" when absent).
def dataset_info(path: str) -> Dict[str, Any]: ...

# docfeed/preprocess.h ProbePageSize: (height, width) of an image file's page after its EXIF
# orientation, from the headers.
def page_size(data: bytes) -> Tuple[int, int]: ...

# docfeed/preprocess.h Preset::GridOf: (temporal, rows, cols) of a page of height x width under a
# Qwen2-VL preset (image_grid_thw) or idefics3 (image_rows, image_cols; 0, 0 for one tile).
def page_grid(preset: str, height: int, width: int, *, min_pixels: int = ..., max_pixels: int = ...,
              patch_size: int = ..., merge_size: int = ..., longest_edge: int = ...,
              max_image_size: int = ..., do_image_splitting: bool = ...) -> Tuple[int, int, int]: ...

# docfeed/remote.h GetRemoteStats: {"requests", "connections", "bytes", "retries", "errors",
# "throttled", "throttle_waits", "throttle_wait_s", "min_concurrency"} of the process's remote
# reads (s3://, http(s)://).
def remote_stats() -> Dict[str, Any]: ...

# docfeed.pack's engine (src/pack/packer.h PackFrom): `rows` is one JSON object per line
# (file_name + the other columns, typed as metadata.jsonl rows); fetch() returns the next rows'
# images in row order (bytes, or a str saying what is wrong with that row; [] at the end).
# Releases the GIL while encoding and writing. Returns the pack summary.
def pack_rows(output: str, rows: str, fetch: Callable[[], List[Any]], *, codec: str = "keep",
              jpeg_quality: int = 90, threads: int = 0, overwrite: bool = False,
              skip_bad: bool = False, strict: bool = False,
              compression: Optional[str] = None, preprocess: str = "",
              size: Optional[Tuple[int, int]] = None, align_long_axis: bool = False,
              hf_version: Optional[int] = None, backend: str = "pil",
              keep_original: bool = False, max_file_mb: int = 500, validate: str = "auto",
              min_pixels: Optional[int] = None, max_pixels: Optional[int] = None,
              patch_size: Union[None, int, Tuple[int, int], Dict[str, int]] = None,
              merge_size: Optional[int] = None,
              longest_edge: Optional[int] = None, max_image_size: Optional[int] = None,
              do_image_splitting: Optional[bool] = None,
              part: Optional[Tuple[int, int]] = None, chat_labels: str = "",
              stored_form: Optional[str] = None,
              max_patches: Optional[int] = None) -> Dict[str, Any]: ...

def pack_path(source: str, output: str, *, codec: str = "keep", jpeg_quality: int = 90,
              threads: int = 0, overwrite: bool = False, skip_bad: bool = False,
              strict: bool = False, compression: Optional[str] = None, preprocess: str = "",
              size: Optional[Tuple[int, int]] = None, align_long_axis: bool = False,
              hf_version: Optional[int] = None, backend: str = "pil",
              keep_original: bool = False, max_file_mb: int = 500, split: str = "",
              image_root: str = "", dpi: int = 200, pages: str = "auto",
              validate: str = "auto", min_pixels: Optional[int] = None,
              max_pixels: Optional[int] = None,
              patch_size: Union[None, int, Tuple[int, int], Dict[str, int]] = None,
              merge_size: Optional[int] = None, longest_edge: Optional[int] = None,
              max_image_size: Optional[int] = None, do_image_splitting: Optional[bool] = None,
              part: Optional[Tuple[int, int]] = None, stored_form: Optional[str] = None,
              max_patches: Optional[int] = None) -> Dict[str, Any]: ...

# docfeed/merge.h Merge: the parts of a split pack joined into `output`; releases the GIL.
def merge(parts: Sequence[str], output: str, *, overwrite: bool = False) -> Dict[str, Any]: ...

def normalize_table(height: int = 2560, width: int = 1920, rescale_factor: float = ...,
                    mean: Sequence[float] = ..., std: Sequence[float] = ...,
                    hf_version: int = 4, backend: str = "pil") -> List[float]: ...

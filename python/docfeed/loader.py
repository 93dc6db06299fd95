"""docfeed.Loader: batches of Donut pixel_values and labels as torch tensors.

The C++ loader (include/docfeed/loader.h) fills a fixed pool of batch buffers on its own threads;
this class hands them out as torch tensors that *view* those buffers (DLPack, no copy). A buffer
returns to the pool when the batch and every tensor made from it are gone, so holding a batch is
always safe; the pool has `prefetch + max_held` buffers: holding up to `max_held` batches leaves
the workers `prefetch` buffers to fill ahead, holding more eats into them, and asking for a batch
while all `prefetch + max_held` are still referenced raises docfeed.ResourceExhaustedError (hold
fewer, raise max_held, or .clone() what you keep).

Threads and processes: next() may be called from several threads (each batch goes to one of
them, all see the end of the epoch); close() from any thread makes a next() blocked on another
raise docfeed.LoaderClosedError at once. In a forked child (a torch DataLoader worker) the first
use makes a new C++ loader at the state the object had at the fork; a pickled loader (spawn) does
the same in the process that unpickles it.

Order and padding are functions of (seed, epoch, position) only: any thread count gives the same
batches, a resumed run continues with exactly the batches an uninterrupted one would have seen,
and ranks of a torch.distributed job read disjoint parts of one global order.

With device="cuda" the loader moves uint8 pixels (a quarter of float32's bytes) from pinned host
buffers to the GPU on a side stream and normalizes them there through the same 3 x 256 table as
the C++ float32 path (docfeed._gpu; same mean/std: image_mean/image_std), so the GPU tensors
equal the CPU ones bit for bit. A host buffer is returned to the pool only after its copy has
completed (a CUDA event).
"""
from __future__ import annotations

import operator
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from docfeed import _docfeed
from docfeed import _gpu
from docfeed.errors import FailedPreconditionError, InvalidArgumentError, LoaderClosedError

_DTYPE_NAMES = ("uint8", "float32", "float16", "bfloat16")


def _dtype_name(dtype: Any) -> str:
    if isinstance(dtype, str):
        name = dtype
    else:
        name = str(dtype).replace("torch.", "")
    if name not in _DTYPE_NAMES:
        raise ValueError(f"dtype must be one of torch.uint8/float32/float16/bfloat16, not {dtype!r}")
    return name


def _int(name: str, value: Any) -> int:
    """`value` as a Python int (numpy integers included), or InvalidArgumentError naming `name`:
    a float or a string is refused rather than truncated. Ranges are checked by the extension."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be an integer, not {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{name} must be an integer, not {value!r}") from None


def _str(name: str, value: Any) -> str:
    """`value` if it is a str, else InvalidArgumentError naming `name` (the extension checks the
    choices)."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a string, not {value!r}")
    return value


_SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def _size_bytes(name: str, value: Any) -> int:
    """A size in bytes: an int, or a string such as "50GB" or "512 MiB" (decimal and binary
    units, case-insensitive); InvalidArgumentError naming `name` otherwise."""
    if isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        digits = len(text) - len(text.lstrip("0123456789."))
        unit = text[digits:]
        try:
            number = float(text[:digits])
        except ValueError:
            number = -1.0
        if unit not in _SIZE_UNITS or number < 0:
            raise InvalidArgumentError(f"{name} must be a number of bytes or a size such as "
                                       f"'50GB' or '512MiB', not {value!r}")
        return int(number * _SIZE_UNITS[unit])
    size = _int(name, value)
    if size < 0:
        raise InvalidArgumentError(f"{name} must not be negative, not {value!r}")
    return size


def _pix2struct_args(preset: str, max_patches: Any, patch_size: Any, dtype: Any,
                     layout: str) -> Dict[str, int]:
    """max_patches and patch_size (an int, or {"height": h, "width": w} as the processor's) for
    the pix2struct preset (defaults: google/pix2struct-base's 2048 and 16 x 16); refused for the
    others. Its output is float32 rows of patches: other dtypes and layout="hwc" are refused."""
    if preset != "pix2struct":
        if max_patches is not None:
            raise InvalidArgumentError(f"max_patches applies to the pix2struct preset, not "
                                       f"preset={preset!r}")
        return {"max_patches": 2048, "patch_height": 16, "patch_width": 16}
    if isinstance(patch_size, dict):
        if set(patch_size) != {"height", "width"}:
            raise InvalidArgumentError(f"patch_size must be an int or {{'height', 'width'}}, got "
                                       f"{patch_size!r}")
        ph, pw = patch_size["height"], patch_size["width"]
    else:
        ph = pw = 16 if patch_size is None else patch_size
    if _dtype_name(dtype) != "float32":
        raise InvalidArgumentError("preset='pix2struct' yields float32 flattened_patches, as the "
                                   "processor; convert after loading")
    if layout != "chw":
        raise InvalidArgumentError(f"layout={layout!r} does not apply to preset='pix2struct'")
    return {"max_patches": _int("max_patches", 2048 if max_patches is None else max_patches),
            "patch_height": _int("patch_size", ph), "patch_width": _int("patch_size", pw)}


def _distributed_defaults(rank: Optional[int], world_size: Optional[int]) -> Tuple[int, int]:
    if rank is not None and world_size is not None:
        return _int("rank", rank), _int("world_size", world_size)
    dist_rank, dist_world = 0, 1
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist_rank, dist_world = dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    return (dist_rank if rank is None else _int("rank", rank),
            dist_world if world_size is None else _int("world_size", world_size))


def _channel_values(name: str, value: Any) -> Optional[List[float]]:
    """None, one number, or 3 numbers (R, G, B) -> None or a list of 3 floats, as
    DonutImageProcessor accepts image_mean/image_std."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return [float(value)] * 3
    values = [float(v) for v in value]
    if len(values) != 3:
        raise ValueError(f"{name} must be one number or 3 (R, G, B), not {value!r}")
    return values


class Batch(dict):
    """One batch: {"pixel_values": tensor, "labels": tensor} (labels only when the dataset has
    them), with the batch's metadata as attributes (CPU tensors / ints):

    sample_ids (B,) int64, pad_offsets (B, 2) int32 (top, left), content_sizes (B, 2) int32
    (height, width), epoch, index (this rank's batch number in the epoch), resume_state (the
    loader state_dict() that continues after this batch). With preset="idefics3" also rows and
    cols, (B, 1) int64: what Idefics3ImageProcessor returns with return_row_col_info=True
    (`batch.rows.tolist()` is its nested list), which its processor's text side needs to insert
    the image tokens. With a Qwen preset and a dataset packed with processor=: input_ids,
    attention_mask and labels (B, L) int64, L the batch's longest row (see Loader's
    label_column).

    A plain dict for everything else (Trainer's input preparation keeps only the items).
    """

    sample_ids: Any = None
    pad_offsets: Any = None
    content_sizes: Any = None
    epoch: int = 0
    index: int = 0
    resume_state: Optional[Dict[str, Any]] = None
    rows: Any = None
    cols: Any = None


class Loader:
    """Iterable over batches of a docfeed dataset (see the module docstring).

    Args:
      path: a docfeed dataset directory (`docfeed pack` output).
      batch_size: samples per batch on this rank.
      image_size: (height, width) of pixel_values, the processor's size (default: the preset's
        processor default, (2560, 1920) for donut, (896, 672) for nougat); a dataset packed with
        `--preprocess donut` must have been packed at this size.
      shuffle, seed: one permutation per (seed, epoch); shuffle=False keeps storage order.
      pad: "random" (the processor's random_padding, redrawn per epoch) or "center".
      dtype: torch.float32 / float16 / bfloat16 (normalized) or torch.uint8 (padded pixels).
      device: None (CPU tensors viewing docfeed's buffers) or a CUDA device.
      drop_last: drop the positions that do not fill a whole step (every rank gets the same
        number of full batches). False: a short last batch with one process; with several the last
        step wraps around to the start of the order, as DistributedSampler pads.
      num_threads: decode/resize threads (0: one per core); prefetch: batches filled ahead;
      max_held: batches the consumer expects to reference at once with `prefetch` buffers still
        filling ahead; next() raises ResourceExhaustedError only when all prefetch + max_held
        buffers are referenced.
      rank, world_size: default to torch.distributed's when it is initialized, else 0 and 1.
      on_error: "raise" on the first unreadable sample (naming it), or "skip" it (replaced by the
        next good sample; at most max_bad_samples in the loader's life).
      align_long_axis: the processor's do_align_long_axis.
      hf_version, backend: which DonutImageProcessor to reproduce: 4 (default; transformers
        4.x, backend "pil") or 5 (transformers 5.x) with backend "pil" (DonutImageProcessorPil)
        or "torchvision" (the torchvision DonutImageProcessor on the CPU). A dataset packed with
        --preprocess donut must have been packed with the same choice.
      label_column: None or "" (default): the dataset's label column when it holds token ids
        (packed with a tokenizer), else no labels; a name picks a list<int64> column (strict);
        "-" for none. label_length: pad labels to this length with -100 (0: the batch's longest
        row). With a Qwen preset and a dataset packed with docfeed.pack(processor=...) (chat
        template token columns), label_column None gives input_ids, attention_mask and labels
        instead, each row padded to the batch's longest: input_ids with the tokenizer's pad id
        recorded at pack time, attention_mask with 0, labels with -100 (label_length does not
        apply); "-" gives none of them.
      layout: "chw" (pixel_values) or "hwc".
      preset: "donut" (default), "nougat" (below) or "qwen2-vl" / "qwen2.5-vl"
        (Qwen2VLImageProcessor, the same for both). With a Qwen preset a batch holds pixel_values as the processor returns them,
        the rows of every page's flattened patches one page after the other (sum of patches,
        3 * temporal_patch_size * patch_size**2), and image_grid_thw (B, 3) int64; image_size,
        pad, align_long_axis and layout do not apply, and hf_version picks the generation (4:
        Qwen2VLImageProcessor of 4.x, 5: Qwen2VLImageProcessorPil of 5.x). min_pixels,
        max_pixels, patch_size, temporal_patch_size, merge_size: the processor's, defaulting to
        the public checkpoints' (3136, 12845056, 14, 2, 2). Each batch buffer holds batch_size
        times the dataset's largest page (from its index).
        "idefics3" (Idefics3ImageProcessor: Idefics3, SmolVLM, SmolDocling): a batch holds
        pixel_values (B, max_tiles, 3, S, S) as the processor pads them (a page's rows x cols
        tiles, then its global image; missing tiles are 0), pixel_attention_mask (B, max_tiles,
        S, S) int64 (1 on a page's tiles, 0 on the padding; a broadcast view, .contiguous() for
        a writable copy), and the attributes rows / cols. longest_edge, max_image_size
        (size["longest_edge"], max_image_size["longest_edge"]) default to
        SmolDocling-256M-preview's 2048 and 512; do_image_splitting=False gives one S x S tile a
        page. hf_version 4 (Idefics3ImageProcessor of 4.x; a mode it raises on, such as gray or
        palette, is taken as image.convert("RGB"), CMYK is refused) or 5
        (Idefics3ImageProcessorPil). image_size, pad, align_long_axis and layout do not apply.
        pixel_values is a view of the loader's buffer (the C++ workers pad each page's tiles to
        the batch's most), never a copy. Original images, or a dataset packed with --preprocess idefics3 at
        the same longest_edge, max_image_size, do_image_splitting and hf_version (others are
        refused).
        "pix2struct" (Pix2StructImageProcessor): a batch holds flattened_patches (B,
        max_patches, 2 + 3 * ph * pw) float32 (a view of the loader's buffer) and attention_mask
        (B, max_patches) float32, as the processor returns them (no pixel_values).
        max_patches and patch_size (an int or {"height": h, "width": w}) default to
        google/pix2struct-base's 2048 and 16 x 16; hf_version 4 (Pix2StructImageProcessor of
        4.x) or 5 (Pix2StructImageProcessorPil), bit-identical to it
        (docs/pix2struct-preprocessing.md). float32 and layout
        "chw" only; image_size, pad, align_long_axis do not apply. Original images, pages packed
        with --preprocess pix2struct (any max_patches; the same hf_version), or the patch rows
        packed with --stored-form patches (copied, not computed: the same max_patches,
        patch_size and hf_version, others are refused; content_sizes is then the resized size
        the rows cover, not the page's).
        "nougat" (NougatImageProcessor): crop_margin, then Donut's geometry (align_long_axis,
        resize, thumbnail) and padding to image_size, normalized with ImageNet's mean/std unless
        image_mean/image_std are given; hf_version 4 (NougatImageProcessor of 4.x, alpha dropped
        as image.convert("RGB")) or 5 (NougatImageProcessorPil with do_convert_rgb=True,
        transparency onto white), backend "pil" only. pad="center" is the processor's padding;
        "random" (the default) is docfeed's augmentation, as for Donut. Original images, or a
        dataset packed with --preprocess nougat at the same image_size, align_long_axis and
        hf_version (others are refused).
      image_mean, image_std: the normalization of float pixel_values, named and given as in
        DonutImageProcessor (one number or one per R, G, B channel): (v / 255 - mean) / std.
        None (default): what the dataset records (a dataset migrated by `docfeed pack` from
        normalized float pixel_values records the mean/std it found, so the original tensors come
        back), else the preset's (Donut's 0.5 / 0.5, Nougat's ImageNet values). The values in
        use are the loader's image_mean/image_std; uint8 output is not normalized.
      range_prefetch: "auto" (default: for s3:// and http(s):// datasets), "on" or "off": read
        the samples' byte ranges in the epoch's order ahead of the workers, neighbours coalesced,
        each checked against its checksum on arrival. prefetch_bytes: fetched and not yet used,
        at most (default 32 MiB); prefetch_requests: range requests in flight (default 8).
      cache_dir: for s3:// and http(s):// datasets, a local directory that keeps what is read
        (ignored for local datasets). Shared by every process naming the same directory (the
        ranks of a node, later runs); each block is checked against its hash when the loader
        first reads it, and a copy that fails is fetched again. cache_limit: the disk it may
        take, in bytes or as a string ("50GB", "512MiB"); None (default): no limit. Past the limit the
        objects no process has open are removed, least recently opened first; when only open
        ones are left, what does not fit is read remotely each epoch.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], batch_size: int,
                 image_size: Optional[Tuple[int, int]] = None, shuffle: bool = True, seed: int = 0,
                 pad: str = "random", dtype: Any = "float32", device: Any = None,
                 drop_last: bool = True, num_threads: int = 0, prefetch: int = 4,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 on_error: str = "raise", *, max_held: int = 3, align_long_axis: bool = False,
                 hf_version: int = 4, backend: str = "pil",
                 label_column: Optional[str] = None, label_length: int = 0, max_bad_samples: int = 100,
                 layout: str = "chw", image_mean: Union[None, float, Sequence[float]] = None,
                 image_std: Union[None, float, Sequence[float]] = None, preset: str = "donut",
                 min_pixels: Optional[int] = None, max_pixels: Optional[int] = None,
                 patch_size: Optional[int] = None, temporal_patch_size: Optional[int] = None,
                 merge_size: Optional[int] = None, longest_edge: Optional[int] = None,
                 max_image_size: Optional[int] = None,
                 do_image_splitting: Optional[bool] = None, max_patches: Optional[int] = None,
                 range_prefetch: str = "auto",
                 prefetch_bytes: int = 32 << 20, prefetch_requests: int = 8,
                 cache_dir: Union[None, str, "os.PathLike[str]"] = None,
                 cache_limit: Union[None, int, str] = None) -> None:
        import os

        preset = _str("preset", preset)
        self._patched = preset in ("qwen2-vl", "qwen2.5-vl")
        self._tiled = preset == "idefics3"
        self._flattened = preset == "pix2struct"
        if (self._patched or self._tiled or self._flattened) and device is not None:
            raise InvalidArgumentError(f"device={device!r} is not supported with preset={preset!r} yet: "
                             "the GPU stage normalizes padded pages; use device=None and move "
                             "pixel_values to the GPU")
        pix2struct_args = _pix2struct_args(preset, max_patches, patch_size, dtype, layout)
        if self._flattened:
            patch_size = None  # Pix2Struct's, read above
        qwen = {"min_pixels": (min_pixels, 56 * 56), "max_pixels": (max_pixels, 12845056),
                "patch_size": (patch_size, 14), "temporal_patch_size": (temporal_patch_size, 2),
                "merge_size": (merge_size, 2)}
        if not self._patched:
            given = [name for name, (value, _) in qwen.items() if value is not None]
            if given:
                raise InvalidArgumentError(f"{', '.join(given)} apply to the qwen2-vl presets, not "
                                 f"preset={preset!r}")
        qwen_args = {name: _int(name, default if value is None else value)
                     for name, (value, default) in qwen.items()}
        self._patch_size = qwen_args["patch_size"]
        idefics3 = {"longest_edge": longest_edge, "max_image_size": max_image_size,
                    "do_image_splitting": do_image_splitting}
        if not self._tiled:
            given = [name for name, value in idefics3.items() if value is not None]
            if given:
                raise InvalidArgumentError(f"{', '.join(given)} apply to the idefics3 preset, not "
                                           f"preset={preset!r}")
        idefics3_args = {
            "longest_edge": _int("longest_edge", 2048 if longest_edge is None else longest_edge),
            "max_image_size": _int("max_image_size",
                                   512 if max_image_size is None else max_image_size),
            "do_image_splitting": True if do_image_splitting is None else bool(do_image_splitting)}
        self._tile_size = idefics3_args["max_image_size"]
        if self._tiled and layout != "chw":
            raise InvalidArgumentError(f"layout={layout!r} does not apply to preset='idefics3': "
                                       "its tiles are channels-first, as the processor's")

        self._rank, self._world_size = _distributed_defaults(rank, world_size)
        self._dtype = _dtype_name(dtype)
        self._gpu = _gpu.GpuStage.create(device, self._dtype, layout, max_held)
        if image_size is None:
            image_size = (896, 672) if preset == "nougat" else (2560, 1920)
        height, width = (_int("image_size", v) for v in image_size)
        if drop_last:
            remainder = "drop"
        else:
            remainder = "partial" if self._world_size == 1 else "wrap"
        # Everything the C++ loader is made from, kept to make it again in a forked or spawned
        # process (see _core).
        self._core_args = dict(
            path=os.fspath(path), height=height, width=width, align_long_axis=bool(align_long_axis),
            hf_version=_int("hf_version", hf_version), backend=_str("backend", backend),
            batch_size=_int("batch_size", batch_size), shuffle=bool(shuffle),
            seed=_int("seed", seed), pad=pad,
            dtype="uint8" if self._gpu is not None else self._dtype,
            # The GPU stage takes HWC uint8 (row copies on the CPU) and reorders on the device.
            layout="hwc" if self._gpu is not None else layout,
            rank=self._rank, world_size=self._world_size, remainder=remainder,
            num_threads=_int("num_threads", num_threads), prefetch=_int("prefetch", prefetch),
            # The GPU stage keeps host buffers until their copies finish: one more.
            max_held=_int("max_held", max_held) + (1 if self._gpu is not None else 0),
            label_column="" if label_column is None else label_column,
            label_length=_int("label_length", label_length), on_error=on_error,
            max_bad_samples=_int("max_bad_samples", max_bad_samples),
            image_mean=_channel_values("image_mean", image_mean),
            image_std=_channel_values("image_std", image_std),
            allocator=self._gpu.pinned_allocator if self._gpu is not None else None,
            preset=preset, range_prefetch=_str("range_prefetch", range_prefetch),
            prefetch_bytes=_int("prefetch_bytes", prefetch_bytes),
            prefetch_requests=_int("prefetch_requests", prefetch_requests),
            cache_dir="" if cache_dir is None else os.fspath(cache_dir),
            cache_limit=0 if cache_limit is None else _size_bytes("cache_limit", cache_limit),
            **qwen_args,
            **idefics3_args, **pix2struct_args)
        self._token_names = self._chat_token_columns(label_column)
        self._max_patches = pix2struct_args["max_patches"]
        self._closed = False
        self._pid = os.getpid()
        self._loader_core = _docfeed.Loader(**self._core_args)
        if self._gpu is not None:
            # The GPU stage normalizes with the same mean/std as the C++ float path would.
            self._gpu.set_normalization(self.image_mean, self.image_std,
                                        hf_version=self._core_args["hf_version"],
                                        backend=self._core_args["backend"])
        self.image_size = (height, width)
        self.batch_size = _int("batch_size", batch_size)
        self.seed = _int("seed", seed)
        self.max_held = _int("max_held", max_held)
        self._num_samples = self._core.num_samples
        self._state = self._full_state(self._core.state())
        # The shape of the state_dict last loaded ((0, 0) when none), so that a forked or spawned
        # copy restores with the same elastic mode.
        self._restored_shape = (0, 0)
        self._epoch_done = False
        self._restored = False

    def _chat_token_columns(self, label_column: Optional[str]) -> List[str]:
        """With a Qwen or the Idefics3 preset, a dataset packed with processor= (its manifest's
        chat_labels) and label_column None: input_ids, attention_mask and labels are batched as
        token columns (padded with the recorded pad id, 0 and -100 to the batch's longest row)
        instead of the label column. Returns their names ([] otherwise); sets the C++ loader's
        arguments. InvalidArgumentError when the labels' image tokens were counted for another
        preset or other settings than this loader's (the model would find more or fewer image
        tokens than image features)."""
        import json

        if not (self._patched or self._tiled) or label_column is not None:
            return []
        path = self._core_args["path"]
        text = _docfeed.dataset_info(path).get("chat_labels", "")
        if not text:
            return []
        chat = json.loads(text)
        family = "idefics3" if self._tiled else "qwen2-vl"
        counted = chat.get("preset", "qwen2-vl")  # datasets of before the key: Qwen's
        if counted != family:
            raise InvalidArgumentError(
                f"{path}: its input_ids count the image tokens of the {counted} processor, not "
                f"of preset={self._core_args['preset']!r}; load it with a {counted} preset")
        keys = (("longest_edge", "max_image_size", "do_image_splitting") if self._tiled
                else ("min_pixels", "max_pixels", "patch_size", "merge_size"))
        differ = [f"{k} {chat[k]} (this loader: {int(self._core_args[k])})" for k in keys
                  if k in chat and int(chat[k]) != int(self._core_args[k])]
        if differ:
            raise InvalidArgumentError(
                f"{path}: its input_ids count the image tokens of pages resized with "
                f"{', '.join(differ)}; give the loader the settings the dataset was packed with")
        pads = {"input_ids": int(chat["pad_token_id"]), "attention_mask": 0, "labels": -100}
        names = list(chat.get("columns", pads))
        self._core_args.update(label_column="-", token_capacity=int(chat["longest"]),
                               token_columns=[(name, pads[name]) for name in names])
        return names

    # ---- the C++ loader, per process ----
    @property
    def _core(self) -> Any:
        """The C++ loader of this process. After fork() (a torch DataLoader worker) the child has
        a copy of the parent's loader object but none of its threads, so the first use in the
        child makes a new C++ loader from the same arguments, at the state this object had (the
        parent's at the fork: its epoch and position); the inherited one is left alone (its
        memory is never freed in the child, and nothing waits on the parent's threads)."""
        import os

        if self._pid != os.getpid():
            self._reopen()
        return self._loader_core

    def _reopen(self) -> None:
        import os

        if self._gpu is not None:
            raise FailedPreconditionError(
                "a docfeed.Loader with device='cuda' cannot be used in a forked process (CUDA "
                "does not survive fork()); create the loader inside the worker, or use device=None "
                "there and move batches to the GPU in the main process")
        if self._closed:
            raise LoaderClosedError("this docfeed loader was closed")
        self._pid = os.getpid()
        self._loader_core = None  # the inherited one: dropped (the C++ side leaks it)
        self._loader_core = _docfeed.Loader(**self._core_args)
        s = self._state
        world_size, batch_size = self._restored_shape
        if (s["epoch"], s["position"], world_size) != (0, 0, 0):
            self._loader_core.restore(s["seed"], s["epoch"], s["position"], world_size=world_size,
                                      batch_size=batch_size, elastic=s["elastic"])

    def __getstate__(self) -> Dict[str, Any]:
        """Pickling (a spawned DataLoader worker) carries the arguments and the state; the other
        process makes its own C++ loader on first use."""
        if self._gpu is not None:
            raise FailedPreconditionError(
                "a docfeed.Loader with device='cuda' cannot be pickled; create it in the process "
                "that uses it")
        state = dict(self.__dict__)
        state["_loader_core"] = None
        state["_pid"] = None
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)

    # ---- properties ----
    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world_size

    @property
    def num_samples(self) -> int:
        return self._core.num_samples

    @property
    def epoch(self) -> int:
        return self._state["epoch"]

    @property
    def preprocessed(self) -> bool:
        """True when the dataset stores the resized stage (packed with --preprocess donut)."""
        return self._core.preprocessed

    @property
    def image_mean(self) -> Tuple[float, float, float]:
        """The per-channel mean float pixel_values are normalized with (see image_mean above)."""
        return tuple(self._core.image_mean)

    @property
    def image_std(self) -> Tuple[float, float, float]:
        """The per-channel std float pixel_values are normalized with."""
        return tuple(self._core.image_std)

    def __len__(self) -> int:
        """Batches this rank gets in the current epoch, counted from where the epoch (or a
        restored state) starts."""
        return self._core.num_batches

    # ---- epochs and state ----
    def set_epoch(self, epoch: int) -> None:
        """Starts `epoch` from its beginning, unless a load_state_dict() of that same epoch has
        not been iterated yet (then its position is kept, so `load_state_dict(); set_epoch(e)`
        resumes mid-epoch as a Trainer-style loop expects)."""
        epoch = _int("epoch", epoch)
        if self._restored and epoch == self._state["epoch"]:
            return
        self._start(epoch, 0)

    def _full_state(self, core_state: Dict[str, Any]) -> Dict[str, Any]:
        """A C++ state (seed, epoch, position, world_size, batch_size, elastic) as state_dict()
        gives it: with num_samples."""
        return dict(core_state, num_samples=self._num_samples)

    def state_dict(self) -> Dict[str, Any]:
        """Where the batches handed out so far end: load_state_dict() of it continues with the
        next batch. Positions are global (all ranks), so any rank's state is valid for all, also
        for a run of another world size (see load_state_dict).

        Keys: seed, epoch, position (positions of the epoch's global order consumed by all ranks
        together; num_samples once the epoch is over), world_size and batch_size (this loader's:
        the shape the state was taken with), num_samples, and elastic: how this loader resumed
        from the state_dict it was last loaded from ("same" if never, or if the shape did not
        change; "global_batch" or "rank_batch"). With several consumer threads: the state after
        the last batch any of them was handed."""
        import os

        state = self._state
        if not self._closed and self._pid == os.getpid():
            try:
                # The C++ loader's, updated under its lock with each batch handed out: exact
                # also when threads race through next() (self._state is their last write).
                state = self._full_state(self._loader_core.state())
            except LoaderClosedError:
                pass  # closed on another thread meanwhile: the last state seen here
        return dict(state)

    def load_state_dict(self, state: Dict[str, Any], elastic: Optional[str] = None) -> None:
        """Continues from a state_dict() of this dataset and seed, taken by a run of any world
        size (an elastic resume): the resumed run serves the rest of the same epoch's global
        order, so over the epoch no sample is served twice and none is skipped (the tail that
        does not fill a whole step of the run that ends the epoch is dropped under drop_last, or
        completed from the epoch's first samples without it, as in any epoch).

        The state records the world_size W and batch_size b it was taken with; this loader has
        W' and b'. `elastic` says what the resume must keep: "global_batch" (W' x b' == W x b:
        the per-rank batch is rescaled, a step is as many samples as before), "rank_batch"
        (b' == b: a step is now W' x b), "same" (nothing may change), or None (default):
        whichever of them holds. Any other combination raises InvalidArgumentError (a
        ValueError) naming world_size and batch_size, the saved and this loader's, and the
        batch_size that would work. The mode is reported by state_dict()["elastic"]. A state
        without world_size and batch_size (written by hand) is taken as this loader's shape."""
        values = {}
        for key in ("seed", "epoch", "position"):
            if key not in state:
                raise InvalidArgumentError(f"state_dict has no {key!r}")
            values[key] = _int(f"state_dict[{key!r}]", state[key])
        shape = {key: _int(f"state_dict[{key!r}]", state[key]) if key in state else 0
                 for key in ("world_size", "batch_size")}
        if (shape["world_size"] == 0) != (shape["batch_size"] == 0):
            raise InvalidArgumentError("state_dict has world_size or batch_size without the "
                                       "other; it needs both (or neither)")
        if elastic is not None:
            elastic = _str("elastic", elastic)
        if values["seed"] != self.seed:
            raise InvalidArgumentError(
                f"state_dict is for seed {values['seed']}, this loader has {self.seed}")
        if "num_samples" in state and _int("state_dict['num_samples']",
                                           state["num_samples"]) != self.num_samples:
            raise InvalidArgumentError(f"state_dict is for {state['num_samples']} samples, this "
                                       f"dataset has {self.num_samples}")
        self._core.restore(values["seed"], values["epoch"], values["position"],
                           world_size=shape["world_size"], batch_size=shape["batch_size"],
                           elastic=elastic)
        self._restored_shape = (shape["world_size"], shape["batch_size"])
        self._state = self._full_state(self._core.state())
        self._epoch_done = False
        self._restored = True

    def _start(self, epoch: int, position: int) -> None:
        if self._gpu is not None:
            self._gpu.drain()
        self._core.start_epoch(epoch, position)
        self._state = dict(self._state, epoch=epoch, position=position)
        self._epoch_done = False
        self._restored = False

    # ---- iteration ----
    def __iter__(self) -> Iterator[Batch]:
        """One epoch: continues where the last iteration stopped; after a finished epoch, the
        next one starts (set_epoch() chooses another)."""
        if self._epoch_done:
            self._start(self._state["epoch"] + 1, 0)
        while True:
            batch = self.next()
            if batch is None:
                return
            yield batch

    def next(self) -> Optional[Batch]:
        """The next batch, or None at the end of the epoch."""
        # All prefetch + max_held batch buffers still referenced raises
        # docfeed.ResourceExhaustedError (a RuntimeError) whose message says to release a batch
        # or raise max_held.
        raw = self._core.next()
        if raw is None:
            self._epoch_done = True
            return None
        self._restored = False
        state = self._full_state(raw.resume_state)
        self._state = state
        out = Batch()
        if self._gpu is not None:
            out["pixel_values"], labels = self._gpu.transfer(raw)
        else:
            out["pixel_values"] = raw.pixels()
            labels = raw.labels()
        if labels is not None:
            out["labels"] = labels
        for k, name in enumerate(self._token_names):
            out[name] = raw.tokens(k)
        # Copies (a few bytes), so only pixel_values and labels keep the pool buffer.
        out.sample_ids = raw.sample_ids().clone()
        out.pad_offsets = raw.pad_offsets().clone()
        out.content_sizes = raw.content_sizes().clone()
        if self._patched:
            # (t, h, w) in patches, as Qwen2VLImageProcessor's image_grid_thw: one frame a page.
            import torch

            grid = out.content_sizes.to(torch.int64) // self._patch_size
            out["image_grid_thw"] = torch.cat(
                [torch.ones((grid.shape[0], 1), dtype=torch.int64), grid], dim=1)
        if self._tiled:
            self._tile(out)
        if self._flattened:
            self._flatten(out)
        out.epoch = raw.epoch
        out.index = raw.index
        # This batch's own (self._state may already be another thread's next batch).
        out.resume_state = dict(state)
        return out

    def _flatten(self, out: Batch) -> None:
        """pixel_values (B * max_patches, values) -> the processor's flattened_patches
        (B, max_patches, values), a view of the buffer, and attention_mask (B, max_patches)
        float32 computed as the processor does: numpy's sum of each row != 0."""
        import numpy as np
        import torch

        pixels = out.pop("pixel_values")  # (B * max_patches, values)
        patches = pixels.view(-1, self._max_patches, pixels.shape[-1])
        out["flattened_patches"] = patches
        out["attention_mask"] = torch.from_numpy(
            (patches.numpy().sum(axis=-1) != 0).astype(np.float32))

    def _tile(self, out: Batch) -> None:
        """pixel_values (B * max_tiles, 3 * S * S) -> the processor's (B, max_tiles, 3, S, S), plus
        pixel_attention_mask, rows and cols. A page's prepared size gives its grid: S x S is one
        tile (rows = cols = 0), else (rows + 1) * S x cols * S (the global image's band below)."""
        import torch

        s = self._tile_size
        sizes = out.content_sizes.to(torch.int64)
        one = (sizes[:, 0] == s) & (sizes[:, 1] == s)
        rows = torch.where(one, 0, sizes[:, 0] // s - 1)
        cols = torch.where(one, 0, sizes[:, 1] // s)
        tiles = torch.where(one, 1, rows * cols + 1)
        flat = out["pixel_values"].view(-1, 3, s, s)
        batch, most = tiles.shape[0], int(tiles.max())
        # The C++ batch pads each page's tiles with zero tiles to the batch's most
        # (Preset::pads_batch), as the processor does: a view of the buffer, no copy.
        if flat.shape[0] != batch * most:
            raise RuntimeError(f"docfeed: an idefics3 batch holds {flat.shape[0]} tiles, not "
                               f"{batch} pages x {most} (a docfeed bug; please report it)")
        out["pixel_values"] = flat.view(batch, most, 3, s, s)
        real = torch.arange(most).unsqueeze(0) < tiles.unsqueeze(1)
        out["pixel_attention_mask"] = real.to(torch.int64)[:, :, None, None].expand(
            batch, most, s, s)
        out.rows = rows.unsqueeze(1)
        out.cols = cols.unsqueeze(1)

    def stats(self) -> Dict[str, Any]:
        """Every field of the C++ LoaderStats (docfeed._docfeed.STATS_FIELDS): the stages read,
        decode, resize, decode_resize (decode and resize fused, for originals needing no
        rotation), pad_normalize, buffer_wait and consumer_wait as (count, seconds); the
        counters as ints; bad_sample_errors as a list of messages; remote: reading a URL by
        byte ranges ahead of the workers (prefetching, requests, bytes_fetched, bytes_used,
        coalesced, refetches, direct_reads, rereads, retries as ints, fetch_wait as (count,
        seconds); all 0 for a local dataset)."""
        return self._core.stats()

    def close(self) -> None:
        """Stops the workers; any thread. A next() blocked on another thread raises
        docfeed.LoaderClosedError at once, and so does every later call. Batches still referenced
        stay valid."""
        import os

        self._closed = True
        if self._gpu is not None:
            self._gpu.drain()
        if self._pid == os.getpid():
            self._loader_core.close()

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

"""docfeed.pack: packs an in-memory Hugging Face dataset (e.g. one loaded with `imagefolder`).

The rows go straight into the C++ packer (docfeed._docfeed.pack_rows over docfeed/pack.h's
PackFrom): no temporary folder, no subprocess. Two passes over the dataset:

  1. the listing: per row, the name stored with its image (images/NNNNNNNN.ext, from the
     image's own path) and its other scalar columns, as one JSON object per row, which C++ types
     exactly as it types a metadata.jsonl (so the result is what `docfeed pack` gives for the
     same rows written as an image folder);
  2. the images: the stored bytes (Arrow record batches of the image column when the dataset
     is a `datasets.Dataset` with an Image feature, so nothing is decoded to PIL; PNG, which is
     lossless, for PIL images), handed to C++ a few rows at a time. C++ encodes and writes
     without the GIL and takes it only to fetch the next rows.

With a Hugging Face tokenizer, the `labels` column is computed here the way the Donut recipes
do: tokenizer(text, add_special_tokens=False, max_length, padding="max_length",
truncation=True).input_ids with the pad id replaced by -100. (For JSON ground truths turned into
Donut target sequences, `docfeed pack --tokenizer` does json2token and the XLM-R tokenization in
C++.)
"""
from __future__ import annotations

import io
import json
import os
import pathlib
import warnings
from collections.abc import Sequence as _Sequence
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from docfeed.errors import DataError, Error, InvalidArgumentError

# Rows handed to C++ per fetch: enough to keep the encode workers busy, few enough to bound
# the memory of fetched-but-not-yet-encoded images.
_FETCH_ROWS = 16

# docfeed pack's --dpi default and --pages choices (tools/docfeed/pack_command.cc).
_DEFAULT_DPI = 200
_PAGES_CHOICES = ("auto", "all", "1")


def _suffix_of(path: Optional[str]) -> str:
    return pathlib.Path(path or "").suffix.lower()


def _image_suffix(value: Any) -> str:
    """The extension of one image cell's stored name ("" when it has none)."""
    if isinstance(value, dict):
        return _suffix_of(value.get("path"))
    if hasattr(value, "save"):  # PIL.Image: stored as PNG
        return ".png"
    return ""


def _image_bytes(value: Any) -> bytes:
    """The encoded file of one image cell: a dict with bytes/path (undecoded datasets Image)
    or a PIL image (PNG)."""
    if isinstance(value, dict):
        if value.get("bytes"):
            return bytes(value["bytes"])
        if value.get("path"):
            return pathlib.Path(value["path"]).read_bytes()
        raise ValueError("the image cell has neither bytes nor path")
    if hasattr(value, "save"):  # PIL.Image
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return buffer.getvalue()
    raise TypeError(f"unsupported image value of type {type(value).__name__}")


def _cell_or_error(value: Any) -> Union[bytes, str]:
    """The bytes of one cell, or (for C++ to report with the row's name) what is wrong."""
    try:
        return _image_bytes(value)
    except Exception as e:  # noqa: BLE001 - reported per row by the packer
        return f"{type(e).__name__}: {e}"


def _arrow_image_dataset(dataset: Any, image_column: str) -> bool:
    """True for a datasets.Dataset whose image column is an Image feature."""
    try:
        from datasets import Dataset, Image
    except ImportError:
        return False
    return isinstance(dataset, Dataset) and isinstance(dataset.features.get(image_column), Image)


class _ArrowImages:
    """The image column of a datasets.Dataset as Arrow record batches (struct<bytes, path>)."""

    def __init__(self, dataset: Any, image_column: str) -> None:
        self.images = dataset.select_columns([image_column]).with_format("arrow")
        self.column = image_column

    def _fields(self, rows: int, *names: str, first: int = 0) -> Iterator[List[List[Any]]]:
        """Per record batch of `rows` rows from row `first` on, the listed struct fields as
        Python lists."""
        import pyarrow.compute as pc

        images = self.images.select(range(first, len(self.images))) if first else self.images
        for table in images.iter(batch_size=rows):
            column = table.column(self.column)
            yield [pc.struct_field(column, name).to_pylist() for name in names]

    def suffixes(self) -> Iterator[str]:
        for (paths,) in self._fields(1024, "path"):
            yield from (_suffix_of(p) for p in paths)

    def cells(self) -> Iterator[Union[bytes, str]]:
        """Every row's stored bytes (or what is wrong with the cell), in order."""
        for paths, data in self._fields(_FETCH_ROWS, "path", "bytes"):
            yield from (_cell_or_error({"bytes": b, "path": p}) for p, b in zip(paths, data))

    def fetcher(self, first: int = 0) -> Callable[[], List[Union[bytes, str]]]:
        fields = self._fields(_FETCH_ROWS, "bytes", "path", first=first)

        def fetch() -> List[Union[bytes, str]]:
            batch = next(fields, None)
            if batch is None:
                return []
            return [_cell_or_error({"bytes": b, "path": p}) for b, p in zip(*batch)]

        return _after_placeholders(first, fetch)


class _RowImages:
    """The image cells of any sequence of dict rows."""

    def __init__(self, rows: Sequence[Dict[str, Any]], image_column: str) -> None:
        self.rows = rows
        self.column = image_column

    def suffixes(self) -> Iterator[str]:
        for row in self.rows:
            yield _image_suffix(row[self.column])

    def cells(self) -> Iterator[Union[bytes, str]]:
        """Every row's stored bytes (or what is wrong with the cell), in order."""
        for row in self.rows:
            yield _cell_or_error(row[self.column])

    def fetcher(self, first: int = 0) -> Callable[[], List[Union[bytes, str]]]:
        it = iter(self.rows)
        for _ in range(first):  # the rows before a part's slice: not read
            next(it, None)

        def fetch() -> List[Union[bytes, str]]:
            out = []
            for row in it:
                out.append(_cell_or_error(row[self.column]))
                if len(out) == _FETCH_ROWS:
                    break
            return out

        return _after_placeholders(first, fetch)


def _after_placeholders(first: int, fetch: Callable[[], List[Union[bytes, str]]]
                        ) -> Callable[[], List[Union[bytes, str]]]:
    """`fetch` preceded by `first` empty images: a part's packer asks only for the rows of its
    slice [first, end), but the binding takes the rows in order from row 0, so the rows before
    the slice are handed over as b"" (never read, never packed) instead of being read."""
    left = [first]

    def fetch_from_first() -> List[Union[bytes, str]]:
        if left[0] > 0:
            n = min(left[0], 4096)
            left[0] -= n
            return [b""] * n
        return fetch()

    return fetch_from_first


def _part_first(part: Optional[Tuple[int, int]], rows: int) -> int:
    """The first row of part (I, N)'s slice of `rows` listed rows (docs/format.md section 16's
    floor(I * L / N)); 0 without a part or for a part the packer will refuse."""
    if part is None:
        return 0
    try:
        index, count = (int(v) for v in part)
    except (TypeError, ValueError):
        return 0
    if not 0 <= index < count or rows < count:
        return 0
    return index * rows // count


def _page_sizes(cells: Iterable[Union[bytes, str]]) -> Iterator[Tuple[int, int]]:
    """(height, width) of each row's page as the preset sees it (after EXIF orientation), from
    the image headers; DataError naming the row for a cell that is not a readable image."""
    from docfeed import chat_labels

    for i, cell in enumerate(cells):
        if isinstance(cell, str):
            raise DataError(f"row {i}: image: {cell}")
        try:
            yield chat_labels.page_size(cell)
        except Error as e:
            raise DataError(f"row {i}: image: cannot read its size ({e})") from None


def _listing(metadata: Iterable[Dict[str, Any]], suffixes: Iterable[str], image_column: str,
             columns: Optional[Sequence[str]], tokenizer: Any, text_column: str,
             max_length: int, labeler: Any = None,
             sizes: Optional[Iterable[Tuple[int, int]]] = None) -> str:
    """Pass 1: one JSON object per row (file_name + kept scalar columns + labels; with a
    chat labeler, input_ids, attention_mask and labels from the row's page size)."""
    pad_id = getattr(tokenizer, "pad_token_id", None)
    lines = []
    page_sizes = iter(sizes) if sizes is not None else None
    for i, (row, suffix) in enumerate(zip(metadata, suffixes)):
        record: Dict[str, Any] = {"file_name": f"images/{i:08d}{suffix if suffix != '.img' else ''}"}
        for key, value in row.items():
            if key == image_column or (columns is not None and key not in columns):
                continue
            if isinstance(value, (str, int, float, bool)):
                record[key] = value
        if tokenizer is not None:
            ids = tokenizer(row[text_column], add_special_tokens=False, max_length=max_length,
                            padding="max_length", truncation=True)["input_ids"]
            record["labels"] = [-100 if t == pad_id else int(t) for t in ids]
        if labeler is not None:
            for name in ("input_ids", "attention_mask", "labels"):
                if name in row:
                    raise InvalidArgumentError(
                        f"row {i}: the dataset has a column {name!r}, which processor= computes "
                        "(remove or rename it)")
            record.update(labeler.columns(row, next(page_sizes), f"row {i}"))
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def _from_cli_args(args: List[str], options: Dict[str, Any]) -> None:
    """The deprecated extra_args (docfeed pack's flags) as typed options."""
    flags = {"--align-long-axis": "align_long_axis", "--keep-original": "keep_original"}
    valued = {"--preprocess": "preprocess", "--compression": "compression", "--codec": "codec",
              "--quality": "jpeg_quality", "--threads": "threads", "--max-file-mb": "max_file_mb",
              "--size": "size", "--hf-version": "hf_version", "--backend": "backend",
              "--longest-edge": "longest_edge", "--max-image-size": "max_image_size"}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in flags:
            options[flags[arg]] = True
            i += 1
            continue
        if arg == "--no-image-splitting":
            options["do_image_splitting"] = False
            i += 1
            continue
        if arg not in valued or i + 1 >= len(args):
            raise InvalidArgumentError(
                f"extra_args: {arg!r} is not one of {sorted(flags) + sorted(valued)} (with a "
                "value); pass the typed keyword arguments instead")
        key, value = valued[arg], args[i + 1]
        if key == "size":
            h, _, w = value.partition("x")
            try:
                options[key] = (int(h), int(w))
            except ValueError:
                raise InvalidArgumentError(f"--size must be HxW, e.g. 1553x1200, not {value!r}") \
                    from None
        elif key in ("jpeg_quality", "threads", "max_file_mb", "hf_version", "longest_edge",
                     "max_image_size"):
            try:
                options[key] = int(value)
            except ValueError:
                raise InvalidArgumentError(f"{arg} takes an integer, not {value!r}") from None
        else:
            options[key] = value
        i += 2


def pack(dataset: Any, output: "str | os.PathLike[str]", *, image_column: str = "image",
         tokenizer: Any = None, text_column: str = "target_sequence", max_length: int = 512,
         columns: Optional[Sequence[str]] = None, codec: Optional[str] = None, threads: int = 0,
         overwrite: bool = False, skip_bad: bool = False, strict: bool = False,
         extra_args: Iterable[str] = (),
         preprocess: Optional[str] = None, size: Optional[Tuple[int, int]] = None,
         align_long_axis: bool = False, keep_original: bool = False,
         compression: Optional[str] = None, jpeg_quality: int = 90,
         max_file_mb: int = 500, hf_version: Optional[int] = None,
         backend: Optional[str] = None, split: Optional[str] = None,
         image_root: "Optional[str | os.PathLike[str]]" = None, dpi: int = _DEFAULT_DPI,
         pages: Union[str, int] = "auto", validate: str = "auto",
         min_pixels: Optional[int] = None, max_pixels: Optional[int] = None,
         patch_size: "Optional[int | Tuple[int, int] | Dict[str, int]]" = None,
         merge_size: Optional[int] = None,
         longest_edge: Optional[int] = None, max_image_size: Optional[int] = None,
         do_image_splitting: Optional[bool] = None, stored_form: Optional[str] = None,
         max_patches: Optional[int] = None,
         part: Optional[Tuple[int, int]] = None, processor: Any = None,
         prompt: Optional[str] = None, prompt_column: Optional[str] = None,
         _summary_out: Optional[Dict[str, Any]] = None) -> str:
    """Packs `dataset` (a datasets.Dataset, or any sequence of dict rows) into `output`.

    `dataset` may also be a path (str or os.PathLike): an image folder, a Hugging Face dataset
    saved with `save_to_disk` (Dataset or DatasetDict), a `load_dataset` cache directory, a
    Parquet file or a Hub-layout folder of them (data/train-00000-of-00004.parquet), or
    WebDataset tar shards; where the images are an `image` column (or, in a dataset with no
    `image` column, a List(Image) column of documents' pages: one sample per page), it is packed
    in C++ as `docfeed pack PATH -o OUTPUT` does, keeping every other column with its type and
    feature. split: only this split of a DatasetDict or Parquet folder; image_root: where cells
    holding only a path are read from.
    dpi and pages (an image folder's documents; `docfeed pack --dpi/--pages`): dpi (1..2400,
    default 200) renders PDF pages; pages says which pages become samples: "auto" (default)
    every page of a PDF and a TIFF as one image (its first page, as datasets shows it), "all"
    every page of a PDF and of a TIFF, "1" (or 1) the first page of each. Page samples get the
    int64 columns `page` and `pages`.

    image_column: the images (a datasets Image column, decoded or not, or PIL images).
    tokenizer: optional Hugging Face tokenizer; with it, `labels` (list<int64>) is added from
      `text_column`, padded/truncated to `max_length` with -100 in place of padding.
    columns: the other columns to keep (default: every column with str/int/float/bool values).
    processor, prompt, prompt_column: chat-template token columns for Qwen2-VL / Qwen2.5-VL
      and Idefics3 / SmolVLM / SmolDocling fine-tuning (docfeed/chat_labels.py). `processor`
      is the user's Hugging Face processor (a Qwen2VLProcessor / Qwen2_5_VLProcessor or an
      Idefics3Processor / SmolVLMProcessor: .tokenizer, .image_processor and
      apply_chat_template); each row becomes the conversation [user: the page, then the
      prompt (`prompt`, the same for every row, or the row's `prompt_column`; "" for none)],
      [assistant: the row's `text_column`], and three list<int64> columns are added:
      input_ids (the processor's, its image placeholder expanded for the page: Qwen's
      repeated grid_h * grid_w / merge_size**2 times for the grid of smart_resize with
      min_pixels, max_pixels, patch_size and merge_size, taken from processor.image_processor
      unless given here; Idefics3's <image> as the processor expands it for the page's tile
      rows and cols, from its longest_edge, max_image_size, do_image_splitting and
      image_seq_len), attention_mask (all 1) and labels (-100 except on the answer and its
      end-of-turn token). The tokenizer's pad id is recorded in the manifest (`chat_labels`),
      and docfeed.Loader(preset="qwen2.5-vl" or "idefics3") batches the three columns padded
      to the batch's longest row. With a Qwen processor preprocess must be None or "qwen2-vl"
      / "qwen2.5-vl" (the same smart_resize settings are then used for the stored pages); with
      an Idefics3 processor None or "idefics3" (likewise: its longest_edge, max_image_size,
      do_image_splitting unless given, and its generation unless hf_version is given). Not
      with tokenizer=, nor for a path (the
      rows are read in memory). A row without the text (or prompt) column, or whose text is
      not a string, raises InvalidArgumentError naming the row and the column; an image whose
      size cannot be read, DataError naming the row. max_length does not apply (a conversation
      is never truncated: that would cut the image tokens).
    codec: keep (default: the stored bytes), png, webp (lossless) or jpeg (at jpeg_quality).
    validate: how codec="keep" checks each image (`docfeed pack --validate`): "full" decodes
      it; "structure" checks the JPEG/PNG container and checksums without decoding (faster;
      src/pack/README.md says what it does not catch); "auto" (default): "structure" for the
      images of a Hugging Face dataset (a `datasets.Dataset` in memory, save_to_disk, the
      cache, Parquet), "full" for files and other rows, and with strict.
    preprocess="donut", size=(height, width), align_long_axis: store the Donut preset's
      deterministic stages (`docfeed pack --preprocess donut --size HxW`); keep_original also
      stores the source file. preprocess="nougat" (size defaults to the processor's (896, 672);
      align_long_axis, hf_version 4 or 5, backend "pil" only) stores NougatImageProcessor's
      cropped and resized pages (`docfeed pack --preprocess nougat`). preprocess="qwen2-vl" or
      "qwen2.5-vl" with min_pixels,
      max_pixels, patch_size, merge_size (default: the processor's 3136, 12845056, 14, 2) stores
      Qwen2VLImageProcessor's smart_resize'd pages instead. preprocess="idefics3" with
      longest_edge, max_image_size, do_image_splitting (default: SmolDocling-256M-preview's
      2048, 512, True; hf_version 4 or 5, backend "pil" only) stores Idefics3ImageProcessor's
      resized pages, the tile grid with the global image below it (`docfeed pack --preprocess
      idefics3`); docfeed.Loader(preset="idefics3") with the same settings and hf_version gives
      the processor's pixel_values for the original pages, and refuses other settings.
      preprocess="pix2struct" (hf_version 4 or 5, backend "pil" only) stores the pages
      Pix2StructImageProcessor starts from: decoded, EXIF-oriented and converted to RGB as that
      generation does, at their own size (`docfeed pack --preprocess pix2struct`), so the loader
      skips the decode; docfeed.Loader(preset="pix2struct") loads them at any max_patches.
      stored_form ("page", the default, or "patches"; pix2struct only) with "patches" stores
      instead the processor's whole output: each page's real flattened_patches rows (its zero
      padding rows left out) as a float PFM that `datasets` opens as a mode "F" image, for
      max_patches (1..65536, default 2048) and patch_size (an int, (height, width) or the
      processor's {"height": h, "width": w}; 1..256 each, default 16 x 16) (`docfeed pack
      --stored-form patches --max-patches N --patch-size HxW`); the loader then only copies the
      rows, and docfeed.Loader(preset="pix2struct") must ask for the same max_patches,
      patch_size and hf_version (others are refused). max_patches and patch_size need
      stored_form="patches"; stored_form and max_patches are refused for other presets.
      hf_version (4 or 5, default 4;
      with processor=, its image processor's generation and backend) and backend ("pil", default, or
      "torchvision" with 5): the DonutImageProcessor generation to reproduce (`--hf-version`,
      `--backend`), recorded in the manifest. compression: none, zstd or lz4_frame (default: none, lz4_frame
      with preprocess). threads: encoding threads (0: all cores); max_file_mb: data file size.
    skip_bad: write bad rows to OUT/rejects.jsonl instead of raising. strict: an image that
      decodes only with warnings (a corrupt JPEG that libjpeg-turbo, and so Pillow, decodes
      anyway, e.g. a bad Huffman code) is a bad row; without it, it is packed and a
      DecodeWarning (a UserWarning) names each such row.
    part=(I, N): pack only part I (0..N-1) of N (`docfeed pack --part I/N`): the I-th of N
      contiguous slices of the samples (document pages counted one by one), the same slice for
      the same source and N on any machine; docfeed.merge joins the N parts into the dataset
      one pack writes. When `output` already is this part, verified, it is kept.
    _summary_out: internal (docfeed.ray): a dict that receives the packer's summary.
    extra_args: deprecated; `docfeed pack` flags (--preprocess, --size, --compression, ...)
      mapped onto the keyword arguments above.
    Returns the output path. Errors are docfeed.Error subclasses naming the row, e.g.
    DataError for an image that does not decode, AlreadyExistsError for an existing output.
    """
    from docfeed import _docfeed

    output = os.fspath(output)
    options: Dict[str, Any] = {
        "codec": codec or "keep", "jpeg_quality": jpeg_quality, "threads": threads,
        "overwrite": bool(overwrite), "skip_bad": bool(skip_bad), "strict": bool(strict),
        "compression": compression,
        "preprocess": preprocess or "", "size": None if size is None else tuple(size),
        "align_long_axis": bool(align_long_axis), "keep_original": bool(keep_original),
        "max_file_mb": max_file_mb, "hf_version": hf_version,
        "backend": "pil" if backend is None else backend, "validate": validate,
        "min_pixels": min_pixels, "max_pixels": max_pixels, "patch_size": patch_size,
        "merge_size": merge_size, "longest_edge": longest_edge,
        "max_image_size": max_image_size,
        "do_image_splitting": None if do_image_splitting is None else bool(do_image_splitting),
        "part": None if part is None else tuple(part),
        "stored_form": stored_form, "max_patches": max_patches,
    }
    extra = list(extra_args)
    if extra:
        warnings.warn("docfeed.pack(extra_args=...) is deprecated; pass preprocess=, size=, "
                      "compression=, ... instead", DeprecationWarning, stacklevel=2)
        _from_cli_args(extra, options)
        options["codec"] = options["codec"] or "keep"

    dpi, pages = _document_options(dpi, pages)
    labeler = _chat_labeler(processor, tokenizer, options, text_column, prompt, prompt_column,
                            backend_given=backend is not None)
    if isinstance(dataset, (str, os.PathLike)):
        if labeler is not None:
            raise InvalidArgumentError(
                "processor= applies to in-memory rows (a datasets.Dataset or a sequence of dict "
                "rows); load the dataset first")
        if tokenizer is not None or columns is not None or image_column != "image":
            raise InvalidArgumentError(
                "tokenizer, columns and image_column apply to in-memory rows; a path is packed "
                "as `docfeed pack` packs it (use its --tokenizer for Donut labels)")
        summary = _docfeed.pack_path(
            os.fspath(dataset), output, split=split or "",
            image_root="" if image_root is None else os.fspath(image_root), dpi=dpi, pages=pages,
            **options)
        _warn_about_decode_warnings(summary)
        if _summary_out is not None:
            _summary_out.update(summary)
        return output
    if split is not None or image_root is not None:
        raise InvalidArgumentError("split and image_root apply to a dataset given by its path")
    if dpi != _DEFAULT_DPI or pages != "auto":
        raise InvalidArgumentError("dpi and pages apply to an image folder given by its path "
                                   "(in-memory rows hold one image each)")
    if _arrow_image_dataset(dataset, image_column):
        images: Any = _ArrowImages(dataset, image_column)
        if (options["validate"] == "auto" and not strict and options["codec"] == "keep"
                and not options["preprocess"]):
            options["validate"] = "structure"  # as for a saved dataset (docfeed/pack.h)
        metadata: Iterable[Dict[str, Any]]
        if len(dataset.column_names) > 1:
            metadata = dataset.remove_columns([image_column]).with_format(None)
        else:  # a dataset without columns has no rows in `datasets`: one empty record per image
            metadata = ({} for _ in range(len(dataset)))
    else:
        rows = dataset if isinstance(dataset, _Sequence) or hasattr(dataset, "__getitem__") \
            else list(dataset)
        images = _RowImages(rows, image_column)
        metadata = rows
    listing = _listing(metadata, images.suffixes(), image_column, columns, tokenizer,
                       text_column, max_length, labeler,
                       None if labeler is None else _page_sizes(images.cells()))
    first = _part_first(options["part"], listing.count("\n"))
    summary = _docfeed.pack_rows(output, listing, images.fetcher(first),
                                 chat_labels="" if labeler is None else labeler.metadata(),
                                 **options)
    _warn_about_decode_warnings(summary)
    if _summary_out is not None:
        _summary_out.update(summary)
    return output


def _chat_labeler(processor: Any, tokenizer: Any, options: Dict[str, Any], text_column: str,
                  prompt: Optional[str], prompt_column: Optional[str],
                  backend_given: bool) -> Any:
    """The ChatLabeler for processor= (None without it), with the smart_resize settings, and
    with preprocess the generation (hf_version, backend), filled into `options` from the
    processor's image processor where not given."""
    if processor is None:
        if prompt is not None or prompt_column is not None:
            raise InvalidArgumentError("prompt and prompt_column apply with processor=")
        return None
    from docfeed import chat_labels

    if tokenizer is not None:
        raise InvalidArgumentError("give tokenizer= (Donut labels) or processor= (chat-template "
                                   "token columns), not both")
    family = chat_labels.processor_family(processor)
    if family == chat_labels.IDEFICS3:
        if options["preprocess"] not in ("", "idefics3"):
            raise InvalidArgumentError(
                f"processor= is an Idefics3 processor; preprocess={options['preprocess']!r} "
                "stores other pages (use preprocess='idefics3' or none)")
        names = ("longest_edge", "max_image_size", "do_image_splitting")
        given = {} if not options["preprocess"] else {
            n: None if options[n] is None else int(options[n]) for n in names}
        settings = chat_labels.processor_settings(processor, given)
        if options["preprocess"]:
            # The stored pages are prepared with the settings the image tokens are counted with.
            options.update({n: settings[n] for n in names[:2]},
                           do_image_splitting=bool(settings["do_image_splitting"]))
            if options["hf_version"] is None:
                options["hf_version"] = chat_labels.processor_generation(processor)[0]
        return chat_labels.ChatLabeler(processor, settings, text_column, prompt, prompt_column)
    if options["preprocess"] not in ("", "qwen2-vl", "qwen2.5-vl"):
        raise InvalidArgumentError(
            f"processor= computes Qwen2-VL image tokens; preprocess={options['preprocess']!r} "
            "stores other pages (use preprocess='qwen2.5-vl' or none)")
    names = ("min_pixels", "max_pixels", "patch_size", "merge_size")
    settings = chat_labels.processor_settings(processor, {n: options[n] for n in names})
    if options["preprocess"]:
        options.update(settings)
        version, backend = chat_labels.processor_generation(processor)
        if options["hf_version"] is None:
            options["hf_version"] = version
            if not backend_given:
                options["backend"] = backend
    return chat_labels.ChatLabeler(processor, settings, text_column, prompt, prompt_column)


def _document_options(dpi: Any, pages: Any) -> Tuple[int, str]:
    """dpi and pages checked as `docfeed pack --dpi/--pages` checks them (ValueError naming the
    parameter); pages=1 is taken for "1"."""
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 1 <= dpi <= 2400:
        raise InvalidArgumentError(f"dpi must be an integer from 1 to 2400, not {dpi!r}")
    if isinstance(pages, int) and not isinstance(pages, bool) and pages == 1:
        pages = "1"
    if pages not in _PAGES_CHOICES:
        raise InvalidArgumentError(f'pages must be "auto", "all" or "1", not {pages!r}')
    return dpi, pages


def _warn_about_decode_warnings(summary: Dict[str, Any]) -> None:
    """One DecodeWarning naming the images that decoded only with warnings, if any."""
    warned = summary.get("decode_warnings", [])
    if warned:
        names = "; ".join(f"{w['file_name']}: {w['warnings']} warning(s), first: {w['first']}"
                          for w in warned[:5])
        more = f" (and {len(warned) - 5} more)" if len(warned) > 5 else ""
        warnings.warn(f"docfeed.pack: {len(warned)} image(s) decoded only with warnings and "
                      f"were packed, as Pillow decodes them (strict=True refuses them): "
                      f"{names}{more}", DecodeWarning, stacklevel=3)


class DecodeWarning(UserWarning):
    """An image docfeed.pack stored although it decodes only with warnings (see strict)."""


def merge(parts: "Iterable[str | os.PathLike[str]]", output: "str | os.PathLike[str]", *,
          overwrite: bool = False) -> Dict[str, Any]:
    """Joins the parts of a split pack (`pack(..., part=(I, N))` or `docfeed pack --part I/N`)
    into `output`, as `docfeed merge PARTS... -o OUTPUT` does: the dataset one pack of the whole
    source writes (same sample ids, order, rows and image bytes). `parts` may come in any order;
    every part must be there once, from the same source with the same settings. The data files
    are hard links to the parts' (copies across file systems); the output appears atomically and
    verified. A rerun finding `output` already merged from these parts keeps it. `output` may be
    s3://BUCKET/PREFIX (uploaded, manifest last); parts on s3:// (packed to s3:// URLs) merge to
    an s3:// output only, their data objects copied inside the store (server_copied_files).

    Returns the summary (parts, samples, rejected, data_files, linked_files, copied_files,
    server_copied_files, output_bytes, already_complete, seconds). Errors are docfeed.Error subclasses naming the
    part and the field (InvalidArgumentError for parts that do not belong together or a missing
    part, DataError for a damaged one, AlreadyExistsError for an existing output).
    """
    from docfeed import _docfeed

    return _docfeed.merge([os.fspath(p) for p in parts], os.fspath(output),
                          overwrite=bool(overwrite))

"""docfeed.pack: packs an in-memory Hugging Face dataset (e.g. one loaded with `imagefolder`).

The dataset is written as an image folder (the stored image bytes when the dataset still has
them, else PNG, which is lossless) with a metadata.jsonl of its other scalar columns, and the
bundled CLI packs that (`docfeed pack`), so the result is exactly what the CLI gives for the same
folder. With a Hugging Face tokenizer, the `labels` column is computed here the way the Donut
recipes do: tokenizer(text, add_special_tokens=False, max_length, padding="max_length",
truncation=True).input_ids with the pad id replaced by -100. (For JSON ground truths turned into
Donut target sequences, `docfeed pack --tokenizer` does json2token and the XLM-R tokenization in
C++.)
"""
from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import tempfile
from typing import Any, Iterable, Optional, Sequence


def _image_bytes(value: Any) -> tuple:
    """(bytes, extension) of one image cell: a dict with bytes/path (undecoded datasets Image)
    or a PIL image."""
    if isinstance(value, dict):
        if value.get("bytes"):
            data = value["bytes"]
            suffix = pathlib.Path(value.get("path") or "").suffix.lower() or ".img"
            return data, suffix
        if value.get("path"):
            path = pathlib.Path(value["path"])
            return path.read_bytes(), path.suffix.lower()
        raise ValueError("image cell has neither bytes nor path")
    if hasattr(value, "save"):  # PIL.Image
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return buffer.getvalue(), ".png"
    raise TypeError(f"unsupported image value of type {type(value).__name__}")


def pack(dataset: Any, output: "str | os.PathLike[str]", *, image_column: str = "image",
         tokenizer: Any = None, text_column: str = "target_sequence", max_length: int = 512,
         columns: Optional[Sequence[str]] = None, codec: Optional[str] = None, threads: int = 0,
         overwrite: bool = False, skip_bad: bool = False, extra_args: Iterable[str] = ()) -> str:
    """Packs `dataset` (a datasets.Dataset, or any sequence of dict rows) into `output`.

    image_column: the images (a datasets Image column, decoded or not, or PIL images).
    tokenizer: optional Hugging Face tokenizer; with it, `labels` (list<int64>) is added from
      `text_column`, padded/truncated to `max_length` with -100 in place of padding.
    columns: the other columns to keep (default: every column with str/int/float/bool values).
    codec: the CLI's --codec (default: keep the stored bytes); extra_args: more CLI options,
      e.g. ["--preprocess", "donut", "--size", "1553x1200"].
    Returns the output path. Errors: the CLI's (naming the sample) as RuntimeError.
    """
    from docfeed import cli_path

    output = os.fspath(output)
    rows = dataset
    try:  # keep stored bytes when the dataset can hand them out undecoded
        from datasets import Dataset, Image

        if isinstance(dataset, Dataset) and isinstance(dataset.features.get(image_column), Image):
            rows = dataset.cast_column(image_column, Image(decode=False))
    except ImportError:
        pass
    pad_id = getattr(tokenizer, "pad_token_id", None)
    with tempfile.TemporaryDirectory(prefix="docfeed-pack-") as tmp:
        root = pathlib.Path(tmp)
        with open(root / "metadata.jsonl", "w", encoding="utf-8") as meta:
            for i, row in enumerate(rows):
                data, suffix = _image_bytes(row[image_column])
                name = f"images/{i:08d}{suffix if suffix != '.img' else ''}"
                (root / name).parent.mkdir(exist_ok=True)
                (root / name).write_bytes(data)
                record = {"file_name": name}
                for key, value in row.items():
                    if key == image_column or (columns is not None and key not in columns):
                        continue
                    if isinstance(value, (str, int, float, bool)):
                        record[key] = value
                if tokenizer is not None:
                    ids = tokenizer(row[text_column], add_special_tokens=False,
                                    max_length=max_length, padding="max_length",
                                    truncation=True)["input_ids"]
                    record["labels"] = [-100 if t == pad_id else int(t) for t in ids]
                meta.write(json.dumps(record, ensure_ascii=False) + "\n")
        args = [cli_path(), "pack", str(root), "-o", output]
        if codec:
            args += ["--codec", codec]
        if threads:
            args += ["--threads", str(threads)]
        if overwrite:
            args.append("--overwrite")
        if skip_bad:
            args.append("--skip-bad")
        args += list(extra_args)
        proc = subprocess.run(args, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"docfeed pack failed ({proc.returncode}): {proc.stderr.strip()}")
    return output

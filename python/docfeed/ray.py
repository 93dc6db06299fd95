"""docfeed.ray: a split pack (docs/format.md section 16) run on a Ray cluster.

A thin layer over the engine-agnostic parts and merge (`docfeed.pack(..., part=(I, N))`,
`docfeed.merge`): each of the N parts is one Ray task that runs the C++ packer on its slice and
writes a complete, verified part under `parts_dir` (a local path every node sees at the same
place); the driver waits for them, then merges (hard links, no copy of image bytes) into `out`.
Nothing here decides which rows a part holds or how a dataset is written: the packer's slice
[floor(I * L / N), floor((I + 1) * L / N)) and the merge's checks do, so the result is the
dataset one `docfeed pack` of the same input writes (same ids, rows and image bytes).

Failure handling comes from the pieces below it:
  * a part whose worker dies (killed, out of memory, node lost) is rerun by Ray (`max_retries`);
    the new attempt clears what the dead one left (the packer's `OUT.partial-<pid>`) and writes
    the part again; a part that fails with an error (bad data without skip_bad, a bad option) is
    not retried: it would fail the same way, and the error names the row;
  * `out` is written by the merge as every docfeed dataset is (a work directory, `state.json`
    last, verify, a no-replace rename): until the merge commits, nothing is at `out`;
  * a rerun (same src, out, num_parts) keeps every part already complete and verified (the
    packer recognises it) and a merge already done.

Input: anything `docfeed.pack` takes by path (an image folder, a saved or Parquet dataset,
WebDataset shards) on the shared file system, or a `ray.data.Dataset` (see `pack`'s docstring for
the rows it must hold and how its parts are made deterministic). Requires `pip install
docfeed[ray]` (ray[data]); importing docfeed does not import ray.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence

from docfeed.errors import InvalidArgumentError

try:
    import ray
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("docfeed.ray needs Ray: pip install 'docfeed[ray]' (ray[data] 2.x)") from e


@dataclasses.dataclass
class PartReport:
    """What one part's task did."""

    index: int
    samples: int
    rejected: int
    already_complete: bool  # a rerun found the part complete and verified, and kept it
    seconds: float
    node: str  # the id of the Ray node that wrote it
    path: str


@dataclasses.dataclass
class PackReport:
    """What docfeed.ray.pack did: the merged dataset and every rejected sample."""

    output: str
    num_parts: int
    samples: int
    parts: List[PartReport]
    # Every rejected sample, one dict per line of the parts' rejects.jsonl in part order (the
    # same lines as out/rejects.jsonl): which source row or file, and why.
    rejects: List[Dict[str, Any]]
    merge: Dict[str, Any]  # docfeed.merge's summary
    seconds: float

    @property
    def parts_reused(self) -> List[int]:
        """The parts a rerun found complete and kept."""
        return [p.index for p in self.parts if p.already_complete]


def _is_url(path: str) -> bool:
    return "://" in path


def _check_places(src: Any, out: str, parts_dir: str) -> None:
    """What docfeed can write where: parts and output local or s3://, s3:// parts with an s3://
    output (merged inside the store); a source on a file system the nodes share."""
    for what, path in (("out", out), ("parts_dir", parts_dir)):
        if _is_url(path) and not path.startswith("s3://"):
            raise InvalidArgumentError(
                f"docfeed.ray.pack: {what} {path!r}: docfeed writes to a local path or to "
                "s3:// only")
    if _is_url(parts_dir) and not _is_url(out):
        raise InvalidArgumentError(
            f"docfeed.ray.pack: parts_dir {parts_dir!r} is on s3:// and out {out!r} is local: "
            "parts on s3:// merge to an s3:// out (inside the store); give an s3:// out or a "
            "local parts_dir")
    if isinstance(src, str) and _is_url(src):
        raise InvalidArgumentError(
            f"docfeed.ray.pack: src {src!r} is a URL; pack reads a local path that every Ray "
            "node sees at the same place (a shared file system)")


def _part_path(parts_dir: str, index: int) -> str:
    if _is_url(parts_dir):
        return parts_dir.rstrip("/") + "/" + str(index)
    return os.path.join(parts_dir, str(index))


def pack(src: Any, out: "str | os.PathLike[str]", *, num_parts: int,
         parts_dir: "Optional[str | os.PathLike[str]]" = None, max_retries: int = 3,
         num_cpus_per_part: float = 1, progress: bool = True, overwrite: bool = False,
         _before_part: Any = None, **pack_options: Any) -> PackReport:
    """Packs `src` into the docfeed dataset `out` as `num_parts` Ray tasks and one merge.

    src: a path `docfeed.pack` accepts (image folder, saved/Parquet dataset, WebDataset shards),
      read by every task, so it must be on a file system every node sees at the same path; or a
      `ray.data.Dataset` (below).
    out: the merged dataset, a local path or s3://BUCKET/PREFIX. It appears only when complete
      (locally the merge's atomic rename; on S3 its manifest, written last); a rerun finding it
      already merged from these parts keeps it.
    num_parts: N, 1 <= N <= the number of samples. Part I is the I-th contiguous slice of the
      samples, the same on any node and in any rerun.
    parts_dir: where the parts go (default: `out` + ".parts"), part I in parts_dir/I: a local
      path shared by the nodes, or s3://BUCKET/PREFIX (each task uploads its part, manifest
      last; then `out` must be s3:// too, and the driver's merge copies the parts' data objects
      inside the store, CopyObject, instead of downloading them). Local parts merge to a local
      `out` (hard links) or to an s3:// one (uploaded). The parts stay after the merge (`out`'s
      data files are links to or copies of theirs; deleting the parts does not change `out`) so
      that a rerun can reuse them.
    max_retries: how many times Ray reruns a part whose worker died (the task's max_retries).
    num_cpus_per_part: the CPUs each task reserves; it is also the part's encoding threads
      unless pack_options sets `threads`.
    progress: a tqdm bar on the driver when tqdm is installed, otherwise one line per part on
      stderr.
    overwrite: repack every part and replace `out` (default: keep complete parts and merge).
    pack_options: `docfeed.pack`'s keyword arguments (codec, skip_bad, preprocess, size, pages,
      dpi, ...), the same for every part; `part` is set here.

    A `ray.data.Dataset` src has one row per sample: an image column (`image_column`, default
    "image") holding the encoded image file, either as a struct/dict {"bytes", "path"} (what a
    `datasets` Image column stores; `path`'s extension names the stored file) or as binary; or,
    with no such column, the columns `bytes` and `path` of `ray.data.read_binary_files(...,
    include_paths=True)`. The other str/int/float/bool columns are kept as `docfeed.pack` keeps a
    `datasets.Dataset`'s (`columns`, `tokenizer` apply). The result is what `docfeed.pack` of the
    same rows in the same order writes. Ray Data does not keep row order by default, so the
    driver materializes the dataset once with `preserve_order` on: its rows in the order its
    input and transforms define, then cuts that order by row index (part I gets rows
    [floor(I * L / N), floor((I + 1) * L / N))). The listing (every row's other columns and
    image path, no image bytes; made by one small task per block) goes to every task through
    the object store; each task reads only its own rows' image bytes, from the materialized
    blocks that hold them (`to_arrow_refs`, sliced by row). A pipeline whose order is itself
    random (e.g. random_shuffle without a seed) has no deterministic parts.

    Returns a PackReport: the parts (samples, rejects, reused or packed, node), every rejected
    sample (from the parts' rejects.jsonl), the merge summary. Errors: InvalidArgumentError for
    bad arguments; the part's docfeed error (naming the row) when a part fails for its data;
    ray.exceptions.RayTaskError/WorkerCrashedError when a part still fails after max_retries.
    """
    import docfeed

    started = time.monotonic()
    out = os.fspath(out)
    if _is_url(out):
        out = out.rstrip("/")
    parts_dir = os.fspath(parts_dir) if parts_dir is not None else out + ".parts"
    _check_places(os.fspath(src) if isinstance(src, os.PathLike) else src, out, parts_dir)
    if isinstance(num_parts, bool) or not isinstance(num_parts, int) or num_parts < 1:
        raise InvalidArgumentError(f"num_parts must be an integer >= 1, not {num_parts!r}")
    if "part" in pack_options:
        raise InvalidArgumentError("docfeed.ray.pack sets each task's part; do not pass part=")
    if not isinstance(max_retries, int) or max_retries < 0:
        raise InvalidArgumentError(f"max_retries must be an integer >= 0, not {max_retries!r}")
    options = dict(pack_options)
    options.setdefault("threads", max(1, int(num_cpus_per_part)))
    options["overwrite"] = bool(overwrite)
    if not _is_url(parts_dir):
        os.makedirs(parts_dir, exist_ok=True)
    if not ray.is_initialized():
        ray.init()  # RAY_ADDRESS or a running local cluster, else a new local one

    # SPREAD: the parts go to as many nodes as there are (packing is bound by each node's
    # cores and disk), not to the first node with a free CPU.
    task = _pack_part.options(max_retries=max_retries, retry_exceptions=False,
                              num_cpus=num_cpus_per_part, scheduling_strategy="SPREAD")
    paths = [_part_path(parts_dir, i) for i in range(num_parts)]
    if _is_ray_dataset(src):
        job = _RayDataJob(src, num_parts, options)
        futures = [task.remote(job.part_input(i), paths[i], (i, num_parts), job.options,
                               _before_part) for i in range(num_parts)]
    else:
        if isinstance(src, os.PathLike):
            src = os.fspath(src)
        src_ref = ray.put(src)
        futures = [task.remote(src_ref, paths[i], (i, num_parts), options, _before_part)
                   for i in range(num_parts)]

    parts = _wait_for_parts(futures, num_parts, progress)
    merged = docfeed.merge(paths, out, overwrite=bool(overwrite))
    rejects = []
    if int(merged.get("rejected", 0)) > 0:  # out's rejects.jsonl: the parts' lines in order
        from docfeed import _docfeed

        name = out.rstrip("/") + "/rejects.jsonl" if _is_url(out) else os.path.join(
            out, "rejects.jsonl")
        text = _docfeed.read_file(name).decode("utf-8")
        rejects.extend(json.loads(line) for line in text.splitlines() if line.strip())
    report = PackReport(output=out, num_parts=num_parts, samples=int(merged["samples"]),
                        parts=parts, rejects=rejects, merge=merged,
                        seconds=time.monotonic() - started)
    if progress:
        reused = len(report.parts_reused)
        print(f"docfeed.ray: {out}: {report.samples} samples from {num_parts} parts "
              f"({reused} kept from an earlier run), {len(rejects)} rejected, "
              f"{report.seconds:.1f} s", file=sys.stderr)
    return report


def _wait_for_parts(futures: List[Any], num_parts: int, progress: bool) -> List[PartReport]:
    """The parts' reports in part order, shown as they finish; the first failure raises (the
    other parts keep running to completion in Ray, and a rerun keeps them)."""
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=num_parts, desc="docfeed.ray pack", unit="part")
        except ImportError:
            bar = None
    done: Dict[int, PartReport] = {}
    pending = list(futures)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            part = ray.get(ready[0])
            done[part.index] = part
            if bar is not None:
                bar.update(1)
                bar.set_postfix(samples=sum(p.samples for p in done.values()))
            elif progress:
                how = "kept (complete)" if part.already_complete else f"{part.seconds:.1f} s"
                print(f"docfeed.ray: part {part.index}/{num_parts} on node {part.node[:8]}: "
                      f"{part.samples} samples, {part.rejected} rejected, {how} "
                      f"[{len(done)}/{num_parts}]", file=sys.stderr)
    finally:
        if bar is not None:
            bar.close()
    return [done[i] for i in range(num_parts)]


@ray.remote
def _pack_part(src: Any, path: str, part: Any, options: Dict[str, Any],
               before_part: Any) -> PartReport:
    """One part: docfeed.pack(src, path, part=part) in this worker (the C++ packer)."""
    import docfeed

    started = time.monotonic()
    if before_part is not None:  # tests: e.g. kill this worker while the part is written
        before_part(part[0], path)
    if isinstance(src, _PartInput):
        src = src.rows()
    summary: Dict[str, Any] = {}
    docfeed.pack(src, path, part=tuple(part), _summary_out=summary, **options)
    return PartReport(index=int(part[0]), samples=int(summary.get("samples", 0)),
                      rejected=int(summary.get("rejected", 0)),
                      already_complete=bool(summary.get("already_complete", False)),
                      seconds=time.monotonic() - started,
                      node=ray.get_runtime_context().get_node_id(), path=path)


# ---- ray.data.Dataset input ----

def _is_ray_dataset(src: Any) -> bool:
    try:
        from ray.data import Dataset
    except ImportError:  # ray without the data extra
        return False
    return isinstance(src, Dataset)


class _RayDataJob:
    """A ray.data.Dataset cut into deterministic parts (see pack's docstring)."""

    def __init__(self, ds: Any, num_parts: int, options: Dict[str, Any]) -> None:
        from ray.data import DataContext

        self.options = dict(options)
        image_column = self.options.pop("image_column", "image")
        # A Dataset runs with the DataContext it was made with (ds.context), not the current
        # one: preserve_order is turned on in that one for the one execution of the user's
        # pipeline, and restored.
        contexts = [ds.context, DataContext.get_current()]
        kept = [c.execution_options.preserve_order for c in contexts]
        try:
            for c in contexts:
                c.execution_options.preserve_order = True
            ds = ds.materialize()
        finally:
            for c, k in zip(contexts, kept):
                c.execution_options.preserve_order = k
        names = list(ds.schema().names)
        if image_column in names:
            self.image, self.path = image_column, None
        elif image_column == "image" and "bytes" in names and "path" in names:
            self.image, self.path = "bytes", "path"  # ray.data.read_binary_files
        else:
            raise InvalidArgumentError(
                f"docfeed.ray.pack: the ray.data.Dataset has no image column {image_column!r} "
                f"(nor `bytes` and `path` of read_binary_files); its columns are {names}")
        other = [c for c in names if c not in (self.image, self.path)]
        # The blocks in the dataset's order; each block's listing (columns and image paths, no
        # image bytes) made where the block is.
        self.blocks = ds.to_arrow_refs()
        listings = ray.get([_block_listing.remote(ref, other, self.image, self.path)
                            for ref in self.blocks])
        metadata = [row for rows, _ in listings for row in rows]
        paths = [p for _, block_paths in listings for p in block_paths]
        self.sizes = [len(block_paths) for _, block_paths in listings]
        self.rows_total = len(paths)
        if num_parts > self.rows_total:
            raise InvalidArgumentError(
                f"num_parts ({num_parts}) is more than the dataset's {self.rows_total} rows")
        self.num_parts = num_parts
        self.listing_ref = ray.put((metadata, paths))
        self.options["image_column"] = _CELL

    def part_input(self, index: int) -> "_PartInput":
        """Part `index`: rows [floor(I * L / N), floor((I + 1) * L / N)) of the dataset, as
        (block, start, stop) pieces of the blocks that hold them."""
        first = index * self.rows_total // self.num_parts
        end = (index + 1) * self.rows_total // self.num_parts
        pieces = []
        offset = 0
        for ref, size in zip(self.blocks, self.sizes):
            lo, hi = max(first, offset), min(end, offset + size)
            if lo < hi:
                pieces.append((ref, lo - offset, hi - offset))
            offset += size
        return _PartInput(self.listing_ref, pieces, first, end, self.image, self.path)


@ray.remote
def _block_listing(block: Any, other: List[str], image: str, path: Optional[str]) -> Any:
    """One block's rows without their image bytes: (columns as dicts, image paths)."""
    metadata = block.select(other).to_pylist() if other else [{} for _ in range(block.num_rows)]
    return metadata, _paths_of(block.column(path or image), path)


# The column name the rows handed to docfeed.pack use for the image (not a user column: the
# user's image column, or read_binary_files' bytes and path, become this one cell).
_CELL = "__docfeed_image__"


def _paths_of(column: Any, path_column: Optional[str]) -> List[Optional[str]]:
    """The image paths of a batch: the `path` column, or the struct's `path` field."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if path_column is not None:
        return column.to_pylist()
    if pa.types.is_struct(column.type):
        return pc.struct_field(column, "path").to_pylist()
    return [None] * len(column)


class _PartInput:
    """What one task needs to pack its part of a ray.data.Dataset: the listing (every row's
    columns and image path) and the Arrow blocks of its own rows, by reference."""

    def __init__(self, listing_ref: Any, pieces: List[Any], first: int, end: int, image: str,
                 path: Optional[str]) -> None:
        self.listing_ref = [listing_ref]  # inside an object, Ray passes references, not values
        self.pieces = list(pieces)  # (block reference, start, stop)
        self.first, self.end, self.image, self.path = first, end, image, path

    def rows(self) -> "_PartRows":
        metadata, paths = ray.get(self.listing_ref[0])
        return _PartRows(metadata, paths, self._images(), self.first, self.end)

    def _images(self) -> Iterator[bytes]:
        """The encoded images of rows first..end-1, in order, one block in memory at a time."""
        import pyarrow as pa
        import pyarrow.compute as pc

        for ref, start, stop in self.pieces:
            table = ray.get(ref).slice(start, stop - start)
            column = table.column(self.image)
            if pa.types.is_struct(column.type):
                column = pc.struct_field(column, "bytes")
            for value in column.to_pylist():
                yield value
            del table, column


class _PartRows(Sequence):
    """The dataset's rows as docfeed.pack reads dict rows: every row's columns and image path
    (its listing), and image bytes only for the rows of this part, read in order."""

    def __init__(self, metadata: List[Dict[str, Any]], paths: List[Optional[str]],
                 images: Iterator[bytes], first: int, end: int) -> None:
        self.metadata, self.paths, self.images = metadata, paths, images
        self.first, self.end, self.next = first, end, first

    def __len__(self) -> int:
        return len(self.metadata)

    def __getitem__(self, i: Any) -> Dict[str, Any]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]  # type: ignore[return-value]
        row = dict(self.metadata[i])
        row[_CELL] = _Cell(self, i)
        return row

    def image(self, i: int) -> bytes:
        if not self.first <= i < self.end:
            return b"\0"  # outside this part: the packer never asks for it
        if i != self.next:
            raise RuntimeError(f"row {i} read out of order (expected {self.next})")
        self.next += 1
        value = next(self.images, None)
        if value is None:
            raise ValueError(f"row {i}: the image is null")
        return bytes(value)


class _Cell(dict):
    """An image cell {"path": ...} whose "bytes" are read only when the packer fetches the row."""

    def __init__(self, rows: _PartRows, i: int) -> None:
        super().__init__(path=rows.paths[i])
        self.rows, self.i, self.data = rows, i, None

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key == "bytes" else super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        if key == "bytes":
            if self.data is None:
                self.data = self.rows.image(self.i)
            return self.data
        return super().__getitem__(key)

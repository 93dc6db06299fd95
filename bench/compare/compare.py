#!/usr/bin/env python3
"""docfeed against the loaders people would pick instead: one command, one run, same pages.

Every contender turns the same documents (the 20 sample documents in tests/data/sample-docs,
interleaved with synthetic invoices from `docfeed synth`) into the same output: Donut
preprocessing at 1553x1200 (resize shortest edge, thumbnail, centred pad, normalize), batches of
8, each given the same number of CPU threads or worker processes (--threads). Each contender runs
in a child process of its own (so peak RSS and CPU time are its own), after its data has been
prepared and read once (warm page cache). Per contender it measures, over a time box (at least
--min-batches batches, then until --seconds have passed or --max-batches were taken):

  pages/s          pages delivered / wall seconds of the window
  CPU s / page     user + sys CPU seconds of the process tree (the child and its workers, psutil)
                   over the window / pages
  peak RSS         the largest sum of RSS over the process tree while the loader ran (sampled
                   every 50 ms; pages shared between processes count once per process)
  disk             bytes of what the contender reads (its dataset / shards / image files)
  pixels vs HF     the first two batches against transformers' DonutImageProcessor output for
                   the same pages (the recipe's stored float32 rows, made by the processor);
                   uint8 outputs are mapped through the processor's own rescale + normalize

    .venv/compare/bin/python bench/compare/compare.py --threads 2 --out build/compare-results

Writes RESULTS/compare.md (table + goals), RESULTS/compare.json and RESULTS/compare.png.
bench/compare/README.md says what each contender does.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
SAMPLES = REPO / "tests" / "data" / "sample-docs"
H, W = 1553, 1200
BATCH = 8

# name -> (family, description); order is the table's order.
CONTENDERS = {
    "recipe-w0": ("recipe", "float32 save_to_disk, no format, DataLoader 0 workers, Trainer's "
                            "default_data_collator"),
    "recipe-wN": ("recipe", "same, DataLoader N workers"),
    "recipe-torch-w0": ("recipe", "same dataset, with_format('torch'), 0 workers"),
    "recipe-torch-wN": ("recipe", "same dataset, with_format('torch'), N workers"),
    "fixed-python-wN": ("fixed", "datasets Image column + DonutImageProcessor in N DataLoader "
                                 "workers"),
    "dali-cpu": ("other", "NVIDIA DALI, device='cpu' ops, num_threads=N: decode, resize shorter "
                          "1200 (linear), fit 1553x1200 (cubic), centred pad, normalize"),
    "spdl": ("other", "Meta SPDL pipeline, N threads: PIL + DonutImageProcessor per page"),
    "webdataset-wN": ("other", "WebDataset tar shards, N DataLoader workers: PIL + "
                               "DonutImageProcessor"),
    "streaming-wN": ("other", "MosaicML Streaming MDS shards, N DataLoader workers: PIL + "
                              "DonutImageProcessor"),
    "docfeed-orig-f32": ("docfeed", "docfeed.Loader on packed original images, N threads, "
                                    "float32 CHW (equal work)"),
    "docfeed-pre-f32": ("docfeed", "docfeed.Loader on `pack --preprocess donut` shards, N "
                                   "threads, float32 CHW (equal output)"),
    "docfeed-orig-u8": ("docfeed", "same as docfeed-orig, uint8 CHW (what the GPU path ships; "
                                   "normalization left to the GPU)"),
    "docfeed-pre-u8": ("docfeed", "same as docfeed-pre, uint8 CHW (GPU path; normalization "
                                  "left to the GPU)"),
}


# ------------------------------------------------------------------------------------------
# Shared helpers (parent and children)


def dir_bytes(path: pathlib.Path) -> int:
    path = pathlib.Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def warm(paths) -> None:
    """Reads every file once so the measured run sees a warm page cache."""
    buf = bytearray(8 << 20)
    for p in paths:
        p = pathlib.Path(p)
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        for f in files:
            with open(f, "rb", buffering=0) as fh:
                while fh.readinto(buf):
                    pass


def load_pages(work: pathlib.Path):
    return json.loads((work / "pages.json").read_text())


def processor():
    from transformers import DonutImageProcessor

    return DonutImageProcessor(size={"height": H, "width": W}, do_align_long_axis=False)


def hf_pixels(proc, image):
    """The fixed Python way's per-page work: DonutImageProcessor, centred padding."""
    return proc(image, random_padding=False, return_tensors="np")["pixel_values"][0]


# ------------------------------------------------------------------------------------------
# Data preparation (parent)


def prepare(work: pathlib.Path, cli: str, n_synth: int, threads: int) -> None:
    """Synthetic invoices + sample documents, interleaved, hard-linked into one image folder."""
    if (work / "pages.json").exists():
        return
    synth = work / "synth"
    if n_synth > 0 and not (synth / "metadata.jsonl").exists():
        subprocess.run([cli, "synth", "-o", str(synth), "--n", str(n_synth), "--seed", "0",
                        "--kind", "invoice", "--threads", str(threads), "--overwrite"],
                       check=True, capture_output=True)
    real = [SAMPLES / json.loads(l)["file_name"]
            for l in (SAMPLES / "metadata.jsonl").read_text().splitlines() if l.strip()]
    fake = [] if n_synth <= 0 else [
        synth / json.loads(l)["file_name"]
        for l in (synth / "metadata.jsonl").read_text().splitlines() if l.strip()]
    order = []
    for i in range(max(len(real), len(fake))):
        if i < len(real):
            order.append(real[i])
        if i < len(fake):
            order.append(fake[i])
    src = work / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    pages = []
    with open(src / "metadata.jsonl", "w") as meta:
        for i, path in enumerate(order):
            name = f"{i:04d}{path.suffix.lower()}"
            os.link(path, src / name)
            meta.write(json.dumps({"file_name": name}) + "\n")
            pages.append({"id": i, "file": str(src / name), "origin": str(path)})
    (work / "pages.json").write_text(json.dumps(pages, indent=1))


# ------------------------------------------------------------------------------------------
# Child: measurement harness


def tree_procs():
    import psutil

    me = psutil.Process()
    procs = [me]
    try:
        procs += me.children(recursive=True)
    except psutil.Error:
        pass
    return me, procs


def tree_cpu() -> float:
    import psutil

    me, procs = tree_procs()
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    t = me.cpu_times()  # children already reaped count here
    return total + t.children_user + t.children_system


class RssSampler(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.peak = 0
        self.stop = threading.Event()

    def run(self):
        import psutil

        while not self.stop.is_set():
            total = 0
            for p in tree_procs()[1]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self.stop.wait(0.05)


def measure(batches, args, spill):
    """Pulls batches of (ids, pixels, kind) from the iterator factory; returns the stats and the
    two warm-up batches (not timed) for the pixel check, spilled to files under `spill` so that
    they do not count in the peak RSS."""
    import numpy as np

    sampler = RssSampler()
    sampler.start()
    t_create = time.perf_counter()
    it = batches()
    kept = []
    for i in range(args.warmup):
        ids, pix, kind = next(it)
        if i == 0:
            first_batch_s = time.perf_counter() - t_create
        f = spill / f"check-{i}.npy"
        np.save(f, np.asarray(pix))
        kept.append((np.array(ids), f))
        del pix
    pages = 0
    n = 0
    cpu0 = tree_cpu()
    t0 = time.perf_counter()
    while True:
        ids, pix, kind = next(it)
        pages += len(ids)
        n += 1
        dt = time.perf_counter() - t0
        if n >= args.max_batches or (n >= args.min_batches and dt >= args.seconds):
            break
    wall = time.perf_counter() - t0
    cpu = tree_cpu() - cpu0
    sampler.stop.set()
    sampler.join()
    close = getattr(it, "close", None)
    if close:
        close()
    return {"pages": pages, "batches": n, "wall_s": wall, "cpu_s": cpu,
            "pages_per_s": pages / wall, "cpu_s_per_page": cpu / pages,
            "peak_rss_mb": sampler.peak / 1e6, "first_batch_s": first_batch_s,
            "output": kind}, kept


def check_pixels(work, kept, kind):
    """Max abs difference between the kept batches and DonutImageProcessor's float32 output."""
    import datasets
    import numpy as np

    ref = datasets.load_from_disk(str(work / "recipe")).with_format("numpy")
    table = None
    if kind == "uint8":
        proc = processor()
        v = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=2)
        x = proc.rescale(v, scale=proc.rescale_factor, input_data_format="channels_last")
        x = proc.normalize(x, mean=proc.image_mean, std=proc.image_std,
                           input_data_format="channels_last")
        table = np.asarray(x, dtype=np.float32).reshape(256, 3).T  # [channel, value]
    worst, differing, total, pages, abs_sum = 0.0, 0, 0, 0, 0.0
    for ids, spilled in kept:
        pix = np.load(spilled, mmap_mode="r")
        for j, pid in enumerate(ids.tolist()):
            want = np.asarray(ref[int(pid)]["pixel_values"], dtype=np.float32)
            got = pix[j]
            if table is not None:
                got = np.stack([table[c][got[c]] for c in range(3)])
            got = np.asarray(got, dtype=np.float32)
            if got.shape != want.shape:
                shutil.rmtree(spilled.parent, ignore_errors=True)
                return {"pages": pages, "exact": False, "max_abs_diff": None,
                        "note": f"shape {got.shape} != processor {want.shape}"}
            d = np.abs(got - want)
            worst = max(worst, float(d.max()))
            differing += int((d > 0).sum())
            abs_sum += float(d.sum(dtype=np.float64))
            total += d.size
            pages += 1
        del pix
    shutil.rmtree(kept[0][1].parent, ignore_errors=True)
    return {"pages": pages, "exact": worst == 0.0, "max_abs_diff": worst,
            "mean_abs_diff": abs_sum / total if total else None,
            "differing_fraction": differing / total if total else None}


def cycle_ids(n_pages, n_batches):
    return [i % n_pages for i in range(n_batches * BATCH)]


# ------------------------------------------------------------------------------------------
# Contenders (each returns (factory of a batch iterator, disk bytes, prep seconds))


def build_recipe(work, pages, threads):
    """The recipe's preprocessing: DonutImageProcessor in dataset.map into float32
    pixel_values (nested lists, as map stores a numpy array), save_to_disk."""
    out = work / "recipe"
    if (out / "dataset_info.json").exists():
        return 0.0
    import datasets
    from PIL import Image

    t = time.perf_counter()
    proc = processor()

    def fn(row):
        with Image.open(row["file"]) as img:
            return {"pixel_values": hf_pixels(proc, img), "page": row["id"]}

    ds = datasets.Dataset.from_list([{"file": p["file"], "id": p["id"]} for p in pages])
    ds = ds.map(fn, remove_columns=["file", "id"], num_proc=threads,
                cache_file_name=str(work / "recipe-map-cache" / "map.arrow"),
                features=datasets.Features({
                    "pixel_values": datasets.Sequence(datasets.Sequence(datasets.Sequence(
                        datasets.Value("float32")))),
                    "page": datasets.Value("int64")}))
    tmp = work / "recipe.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    ds.save_to_disk(str(tmp))
    shutil.rmtree(work / "recipe-map-cache", ignore_errors=True)
    tmp.rename(out)
    return time.perf_counter() - t


def dataloader_batches(dataset, sampler, workers, collate):
    import torch  # noqa: F401
    from torch.utils.data import DataLoader

    def gen():
        dl = DataLoader(dataset, batch_size=BATCH, sampler=sampler, num_workers=workers,
                        collate_fn=collate, persistent_workers=False)
        for b in dl:
            yield b["page"].numpy(), b["pixel_values"], "float32"
    return gen


def c_recipe(name, work, pages, args):
    import datasets
    from transformers import default_data_collator

    prep = build_recipe(work, pages, args.threads)
    ds = datasets.load_from_disk(str(work / "recipe"))
    if "torch" in name:
        ds = ds.with_format("torch")
    workers = args.threads if name.endswith("wN") else 0
    sampler = cycle_ids(len(pages), args.max_batches + 2)
    warm([work / "recipe"])
    return (dataloader_batches(ds, sampler, workers, default_data_collator),
            dir_bytes(work / "recipe"), prep)


def c_fixed(name, work, pages, args):
    import datasets
    import numpy as np
    from transformers import default_data_collator

    out = work / "fixed"
    prep = 0.0
    if not (out / "dataset_info.json").exists():
        t = time.perf_counter()
        ds = datasets.Dataset.from_dict({"image": [p["file"] for p in pages],
                                         "page": [p["id"] for p in pages]})
        ds = ds.cast_column("image", datasets.Image())
        tmp = work / "fixed.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        ds.save_to_disk(str(tmp))
        tmp.rename(out)
        prep = time.perf_counter() - t
    proc = processor()

    def transform(batch):
        pv = np.stack([hf_pixels(proc, img) for img in batch["image"]])
        return {"pixel_values": pv, "page": batch["page"]}

    ds = datasets.load_from_disk(str(out)).with_transform(transform)
    sampler = cycle_ids(len(pages), args.max_batches + 2)
    disk = dir_bytes(out)
    # save_to_disk embeds the image bytes; if a version kept only paths, count the files too.
    if disk < sum(os.path.getsize(p["file"]) for p in pages) // 2:
        disk += sum(os.path.getsize(p["file"]) for p in pages)
    warm([out])
    return (dataloader_batches(ds, sampler, args.threads, default_data_collator), disk, prep)


def c_dali(name, work, pages, args):
    import numpy as np
    from nvidia.dali import fn, pipeline_def, types

    files = [p["file"] for p in pages]

    @pipeline_def(batch_size=BATCH, num_threads=args.threads, device_id=None,
                  prefetch_queue_depth=2, exec_dynamic=False)
    def pipe():
        data, label = fn.readers.file(files=files, labels=list(range(len(files))),
                                      random_shuffle=False, name="reader")
        img = fn.decoders.image(data, device="cpu", output_type=types.RGB)
        img = fn.resize(img, resize_shorter=min(H, W), interp_type=types.INTERP_LINEAR,
                        antialias=True)
        img = fn.resize(img, resize_x=W, resize_y=H, mode="not_larger",
                        interp_type=types.INTERP_CUBIC, antialias=True)
        img = fn.crop(img, crop_h=H, crop_w=W, crop_pos_x=0.5, crop_pos_y=0.5,
                      out_of_bounds_policy="pad", fill_values=0)
        img = fn.crop_mirror_normalize(img, dtype=types.FLOAT, output_layout="CHW",
                                       mean=[127.5] * 3, std=[127.5] * 3)
        return img, label

    def gen():
        p = pipe()
        p.build()
        while True:
            img, label = p.run()
            yield (np.asarray(label.as_array()).reshape(-1), img.as_array(), "float32")
    warm(files)
    return gen, sum(os.path.getsize(f) for f in files), 0.0


def c_spdl(name, work, pages, args):
    import numpy as np
    from PIL import Image
    from spdl.pipeline import PipelineBuilder

    proc = processor()
    files = [p["file"] for p in pages]

    def load(i):
        with Image.open(files[i]) as img:
            return i, hf_pixels(proc, img)

    def collate(items):
        return (np.array([i for i, _ in items]), np.stack([x for _, x in items]), "float32")

    def gen():
        src = cycle_ids(len(pages), args.max_batches + 4)
        pipeline = (PipelineBuilder().add_source(src)
                    .pipe(load, concurrency=args.threads)
                    .aggregate(BATCH, drop_last=True)
                    .pipe(collate)
                    .add_sink(3)
                    .build(num_threads=args.threads))
        with pipeline.auto_stop():
            yield from pipeline
    warm(files)
    return gen, sum(os.path.getsize(f) for f in files), 0.0


def wds_process(proc):
    from PIL import Image

    def process(sample):
        key = [k for k in sample if k in ("jpg", "jpeg", "png")][0]
        import io
        with Image.open(io.BytesIO(sample[key])) as img:
            return {"pixel_values": hf_pixels(proc, img), "page": int(sample["cls"])}
    return process


def page_batches(ds, args):
    """(page ids, float32 pixel_values, "float32") per batch of a dataset of {"page",
    "pixel_values"} samples, through a torch DataLoader with args.threads workers."""
    from torch.utils.data import DataLoader

    for b in DataLoader(ds, batch_size=BATCH, num_workers=args.threads):
        yield b["page"].numpy(), b["pixel_values"], "float32"


def c_webdataset(name, work, pages, args):
    import webdataset as wds

    out = work / "wds"
    prep = 0.0
    n_shards = 2 * args.threads
    if not (out / "done").exists():
        t = time.perf_counter()
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        per = (len(pages) + n_shards - 1) // n_shards
        for s in range(n_shards):
            with wds.TarWriter(str(out / f"shard-{s:04d}.tar")) as sink:
                for p in pages[s * per:(s + 1) * per]:
                    ext = pathlib.Path(p["file"]).suffix.lstrip(".").replace("jpeg", "jpg")
                    sink.write({"__key__": f"{p['id']:06d}", ext: pathlib.Path(p["file"])
                                .read_bytes(), "cls": p["id"]})
        (out / "done").write_text("")
        prep = time.perf_counter() - t
    urls = [str(out / f"shard-{s:04d}.tar") for s in range(n_shards)]
    proc = processor()

    def gen():
        ds = wds.WebDataset(urls, resampled=True, shardshuffle=False).map(wds_process(proc))
        yield from page_batches(ds, args)
    warm([out])
    return gen, dir_bytes(out), prep


def c_streaming(name, work, pages, args):
    from streaming import MDSWriter, StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    out = work / "mds"
    prep = 0.0
    if not (out / "index.json").exists():
        t = time.perf_counter()
        shutil.rmtree(out, ignore_errors=True)
        with MDSWriter(out=str(out), columns={"image": "bytes", "page": "int"},
                       size_limit="16mb") as w:
            for p in pages:
                w.write({"image": pathlib.Path(p["file"]).read_bytes(), "page": p["id"]})
        prep = time.perf_counter() - t
    clean_stale_shared_memory()
    proc = processor()

    class Donut(StreamingDataset):
        def __getitem__(self, i):
            import io

            from PIL import Image

            s = super().__getitem__(i)
            with Image.open(io.BytesIO(s["image"])) as img:
                return {"pixel_values": hf_pixels(proc, img), "page": int(s["page"])}

    def gen():
        ds = Donut(local=str(out), remote=None, shuffle=False, batch_size=BATCH,
                   epoch_size=(args.max_batches + 4) * BATCH * max(1, args.threads))
        yield from page_batches(ds, args)
    warm([out])
    return gen, dir_bytes(out), prep


def c_docfeed(name, work, pages, args):
    import docfeed

    pre = "-pre-" in name
    dtype = "uint8" if name.endswith("u8") else "float32"
    out = work / ("docfeed-pre" if pre else "docfeed-orig")
    prep = 0.0
    if not (out / "docfeed.json").exists():
        t = time.perf_counter()
        cmd = [docfeed.cli_path(), "pack", str(work / "src"), "-o", str(out), "--threads",
               str(args.threads)]
        if pre:
            cmd += ["--preprocess", "donut", "--size", f"{H}x{W}"]
        subprocess.run(cmd, check=True, capture_output=True)
        prep = time.perf_counter() - t

    def gen():
        loader = docfeed.Loader(out, batch_size=BATCH, image_size=(H, W), shuffle=False,
                                pad="center", dtype=dtype, num_threads=args.threads,
                                label_column="-", layout="chw")
        try:
            while True:
                for b in loader:
                    yield b.sample_ids.numpy(), b["pixel_values"], dtype
        finally:
            loader.close()
    warm([out])
    return gen, dir_bytes(out), prep


def contender_factory(name):
    fam = name.split("-")[0]
    return {"recipe": c_recipe, "fixed": c_fixed, "dali": c_dali, "spdl": c_spdl,
            "webdataset": c_webdataset, "streaming": c_streaming, "docfeed": c_docfeed}[fam]


def child(args):
    work = pathlib.Path(args.work)
    pages = load_pages(work)
    result = {"name": args.child}
    try:
        import torch

        torch.set_num_threads(args.threads)
        gen, disk, prep = contender_factory(args.child)(args.child, work, pages, args)
        result.update(disk_bytes=disk, prep_s=prep)
        # The no-format recipe takes tens of seconds a batch: one warm-up batch is enough there.
        args.warmup = 1 if args.child == "recipe-w0" else 2
        spill = work / f"check-{args.child}"
        shutil.rmtree(spill, ignore_errors=True)
        spill.mkdir()
        stats, kept = measure(gen, args, spill)
        result.update(stats)
        result["pixels"] = check_pixels(work, kept, stats["output"])
    except BaseException as e:  # reported in the table, not raised
        result["error"] = f"{type(e).__name__}: {e}".strip()
        result["traceback"] = traceback.format_exc()
    pathlib.Path(args.json_out).write_text(json.dumps(result, indent=1))
    sys.stdout.flush()
    os._exit(0)  # do not wait for daemon threads / stuck workers of a failed contender


# ------------------------------------------------------------------------------------------
# Parent: run every contender, then the table, the chart and the goals


def loadavg():
    return "%.2f %.2f %.2f" % os.getloadavg()


def run_children(args, names, work, res):
    results = {}
    for name in names:
        out = res / f"{name}.json"
        out.unlink(missing_ok=True)
        cmd = [sys.executable, __file__, "--child", name, "--json-out", str(out),
               "--work", str(work), "--threads", str(args.threads), "--seconds", str(args.seconds),
               "--min-batches", str(args.min_batches), "--max-batches", str(args.max_batches)]
        t = time.time()
        la = loadavg()
        print(f"[{time.strftime('%H:%M:%S')}] {name} (load {la}) ...", flush=True)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            stderr = proc.stderr
        except subprocess.TimeoutExpired as e:
            stderr = (e.stderr or b"").decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            stderr += f"\ntimed out after {args.timeout} s"
        (res / f"{name}.log").write_text(stderr)
        if out.exists():
            r = json.loads(out.read_text())
        else:
            tail = [l for l in stderr.splitlines() if l.strip()]
            r = {"name": name, "error": tail[-1] if tail else "child died without output"}
        if "error" in r:
            install_log = res / f"install-{name.split('-')[0]}.log"
            if install_log.exists():
                errs = [l for l in install_log.read_text().splitlines() if "ERROR" in l]
                if errs:
                    r["install_error"] = errs[0].strip()
        r["load_before"] = la
        r["elapsed_s"] = time.time() - t
        results[name] = r
        msg = r.get("error") or (f"{r['pages_per_s']:.2f} pages/s, {r['cpu_s_per_page']:.3f} "
                                 f"CPU s/page, pixels max diff {r['pixels'].get('max_abs_diff')}")
        print(f"    {msg} ({r['elapsed_s']:.0f} s)", flush=True)
    return results


def ratio(a, b):
    return a / b if a and b else None


def fmt_ratio(x):
    if x is None:
        return "-"
    return f"{x:.0f}x" if x >= 100 else (f"{x:.1f}x" if x >= 10 else f"{x:.2f}x")


def pixel_cell(r):
    px = r.get("pixels") or {}
    if px.get("max_abs_diff") is None:
        return px.get("note", "-")
    u8 = " (uint8 via the processor's normalize)" if r.get("output") == "uint8" else ""
    if px["exact"]:
        return f"equal, {px['pages']} pages{u8}"
    return (f"max abs diff {px['max_abs_diff']:.3g}, mean {px['mean_abs_diff']:.3g} "
            f"({100 * px['differing_fraction']:.1f} % of values differ){u8}")


def table(results, n):
    base0 = results.get("recipe-w0", {})
    baseN = results.get("recipe-wN", {})
    fixed = results.get("fixed-python-wN", {})
    lines = [f"| contender | what it does | pages/s | CPU s / page | cores busy | peak RSS MB "
             f"| disk MB (KB/page) | pixels vs DonutImageProcessor | vs recipe-w0: pages/s, "
             f"per core | vs recipe-wN: pages/s, per core | vs fixed Python: pages/s, per core |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for name, r in results.items():
        what = CONTENDERS[name][1].replace("N ", f"{n} ").replace("=N", f"={n}")
        if "error" in r:
            why = r["error"]
            if r.get("install_error"):
                why = f"did not install: {r['install_error']}; then {why}"
            why = why.replace("|", "\\|").replace("\n", " ")[:400]
            lines.append(f"| {name} | {what} | - | - | - | - | - | **not run**: `{why}` | - | - "
                         f"| - |")
            continue
        pps, cpp = r["pages_per_s"], r["cpu_s_per_page"]

        def vs(b):
            return (f"{fmt_ratio(ratio(pps, b.get('pages_per_s')))}, "
                    f"{fmt_ratio(ratio(b.get('cpu_s_per_page'), cpp))}")
        lines.append(
            f"| {name} | {what} | {pps:.3g} | {cpp:.3g} | {pps * cpp:.2f} | "
            f"{r['peak_rss_mb']:.0f} | "
            f"{r['disk_bytes'] / 1e6:.1f} ({r['disk_bytes'] / 1e3 / r['n_pages']:.0f}) | "
            f"{pixel_cell(r)} | {vs(base0)} | {vs(baseN)} | {vs(fixed)} |")
    return "\n".join(lines)


def goals(results):
    def get(name, key):
        r = results.get(name, {})
        return None if "error" in r else r.get(key)

    out = []
    for dname in ("docfeed-orig-f32", "docfeed-pre-f32"):
        d = get(dname, "pages_per_s")
        for base in ("recipe-w0", "recipe-wN"):
            x = ratio(d, get(base, "pages_per_s"))
            y = ratio(get(base, "cpu_s_per_page"), get(dname, "cpu_s_per_page"))
            if x is not None:
                out.append(f"- {dname} vs {base}: {fmt_ratio(x)} pages/s, {fmt_ratio(y)} per "
                           f"core ({'met' if x >= 100 else 'NOT met'}: goal >= 100x)")
        x = ratio(get("fixed-python-wN", "cpu_s_per_page"), get(dname, "cpu_s_per_page"))
        if x is not None:
            out.append(f"- {dname} vs fixed-python-wN per core (pages per CPU-second): "
                       f"{fmt_ratio(x)} ({'met' if x >= 10 else 'NOT met'}: goal >= 10x)")
    d = get("docfeed-orig-f32", "pages_per_s")
    dc = get("docfeed-orig-f32", "cpu_s_per_page")
    for other in ("fixed-python-wN", "dali-cpu", "spdl", "webdataset-wN", "streaming-wN"):
        o = get(other, "pages_per_s")
        if d is None or o is None:
            missing = "docfeed-orig-f32" if d is None else other
            why = results.get(missing, {}).get("error", f"{missing} not run")
            out.append(f"- docfeed-orig-f32 vs {other}: not measured ({why[:200]})")
            continue
        x = ratio(d, o)
        y = ratio(get(other, "cpu_s_per_page"), dc)
        out.append(f"- docfeed-orig-f32 vs {other} (equal work from the original images): "
                   f"{fmt_ratio(x)} pages/s, {fmt_ratio(y)} per core "
                   f"({'ahead' if x and x > 1 else 'NOT ahead'})")
    return "\n".join(out)


def chart(results, path, n):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [(k, r) for k, r in results.items() if "error" not in r]
    if not ok:
        return
    names = [k for k, _ in ok]
    colors = [("#9ecae1" if k.endswith("u8") else "#1f77b4") if k.startswith("docfeed")
              else "#999999" for k in names]
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.45 * len(names) + 1.6))
    axes[0].barh(names, [r["pages_per_s"] for _, r in ok], color=colors)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("pages/s (log)")
    axes[0].invert_yaxis()
    axes[1].barh(names, [1 / r["cpu_s_per_page"] for _, r in ok], color=colors)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("pages per CPU-second (log)")
    axes[1].invert_yaxis()
    axes[1].set_yticklabels([])
    from matplotlib.ticker import NullFormatter

    for ax in axes:
        ax.xaxis.set_minor_formatter(NullFormatter())
    for ax, key in ((axes[0], "pages_per_s"), (axes[1], None)):
        for i, (_, r) in enumerate(ok):
            v = r["pages_per_s"] if key else 1 / r["cpu_s_per_page"]
            ax.text(v, i, f" {v:.3g}", va="center", fontsize=8)
    fig.suptitle(f"Donut pages 1553x1200, batch 8, {n} threads/workers each (grey: other "
                 f"loaders; light blue: docfeed uint8, normalization left to the GPU)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def parent(args):
    work = pathlib.Path(args.work)
    res = pathlib.Path(args.out)
    res.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    cli = args.cli or os.environ.get("DOCFEED_CLI")
    if not cli:
        import docfeed

        cli = docfeed.cli_path()
    os.environ["DOCFEED_CLI"] = cli
    t_start = time.time()
    prepare(work, cli, args.synth, args.threads)
    pages = load_pages(work)
    names = [n for n in CONTENDERS if (not args.only or n in args.only)
             and n not in (args.skip or [])]
    # The recipe's dataset is the pixel reference: build it first.
    if not (work / "recipe" / "dataset_info.json").exists():
        print("building the recipe's float32 dataset (the processor's output, the reference) ...",
              flush=True)
        t = time.perf_counter()
        build_recipe(work, pages, args.threads)
        print(f"    {time.perf_counter() - t:.0f} s", flush=True)
    results = run_children(args, names, work, res)
    for r in results.values():
        r["n_pages"] = len(pages)
    n_real = sum(1 for p in pages if str(SAMPLES) in p["origin"])
    head = [f"Command: `{' '.join([os.path.relpath(sys.executable, REPO)] + sys.argv)}`",
            f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t_start))} - "
            f"{time.strftime('%H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs; load average "
            f"at the start {results[names[0]]['load_before'] if names else '-'}, at the end "
            f"{loadavg()}",
            f"Pages: {len(pages)} ({n_real} sample documents + {len(pages) - n_real} synthetic "
            f"invoices, interleaved, read in that order, cycling); {args.threads} threads or "
            f"workers each; time box: at least {args.min_batches} batches, then up to "
            f"{args.seconds:g} s or {args.max_batches} batches; warm page cache."]
    md = "\n".join(head) + "\n\n" + table(results, args.threads) + "\n\nGoals:\n" + goals(
        results) + "\n"
    (res / "compare.md").write_text(md)
    (res / "compare.json").write_text(json.dumps({"args": vars(args), "pages": len(pages),
                                                  "results": results}, indent=1))
    chart(results, res / "compare.png", args.threads)
    print()
    print(md)
    print(f"wrote {res / 'compare.md'}, compare.json, compare.png "
          f"({time.time() - t_start:.0f} s in all)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2, help="threads / worker processes each")
    ap.add_argument("--synth", type=int, default=44, help="synthetic invoices (20 real + 44: 64 "
                    "pages, 8 batches)")
    ap.add_argument("--seconds", type=float, default=20.0, help="time box per contender")
    ap.add_argument("--min-batches", type=int, default=2)
    ap.add_argument("--max-batches", type=int, default=400)
    ap.add_argument("--timeout", type=int, default=300, help="per contender, seconds")
    ap.add_argument("--work", default="/tmp/docfeed-compare")
    ap.add_argument("--out", default=str(REPO / "build" / "compare-results"))
    ap.add_argument("--cli", default=None, help="docfeed CLI (default: DOCFEED_CLI or the "
                    "installed package's)")
    ap.add_argument("--only", nargs="*", help="run only these contenders")
    ap.add_argument("--skip", nargs="*", help="skip these contenders")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--json-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    main()

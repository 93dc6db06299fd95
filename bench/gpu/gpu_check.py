#!/usr/bin/env python3
"""One short GPU check of docfeed's Python front; prints one JSON object.

Run on a machine with a CUDA GPU, in the venv that has docfeed installed (`make python-install`
puts it in .venv/train):

    .venv/train/bin/python bench/gpu/gpu_check.py [--steps 20] [--batch 8] [--data DIR]
        [--checks normalization,copy,training,feed,jpeg_decode,recipe] [--recipe-steps 3]

Results on an H200: docs/benchmarks.md "On a GPU (H200)".

Checks, in order (each result is a key of the JSON):
  normalization  the GPU path (uint8 over the wire, table lookup on the GPU) equals the CPU
                 float32 path bit for bit, for float32 / float16 / bfloat16, random and centred
                 padding, on the sample documents at 1553x1200.
  copy           host-to-device bandwidth of pinned vs pageable memory (one batch's bytes).
  training       a real training step of a random-initialized Donut-base (DonutSwin: embed_dim
                 128, depths [2,2,14,2], heads [4,8,16,32], window 10; MBart decoder 4 layers,
                 d_model 1024) at 1553x1200 fed by docfeed.Loader(device="cuda"): step time,
                 time the loop waits for input per step, and the GPU busy fraction (GPU time of
                 the steps / wall time).
  feed           how many pages/s docfeed.Loader builds on this machine's CPU cores from the
                 original pages (decode + resize + pad) and from the preprocessed shards
                 (decompress + pad), uint8 HWC as the GPU path ships, at 1, 4 and all threads,
                 next to the pages/s the training step above consumes.
  jpeg_decode    the JPEG sample pages decoded by nvJPEG (torchvision.io.decode_jpeg on "cuda",
                 one batched call per round) against libjpeg-turbo on one CPU core
                 (torchvision.io.decode_jpeg on "cpu"), same files, same run; plus how far the
                 two decoders' pixels differ (they are not bit-identical: different IDCTs and
                 chroma upsampling).
  recipe         the same Donut-base step fed the recipe's way (float32 pages stored as
                 nested lists, a DataLoader with default_data_collator, at 0 and 8 workers;
                 pyarrow stands in for `datasets`, see check_recipe): seconds per step, input
                 wait and GPU busy fraction, to compare with "training" above.
Without CUDA it prints {"cuda": false, ...} and, with --cpu-smoke, runs the training, feed and
recipe parts with a tiny model and pages on the CPU (to check the script itself).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import torch

import docfeed

REPO = pathlib.Path(__file__).resolve().parents[2]


def pack(src, out, size):
    cmd = [docfeed.cli_path(), "pack", str(src), "-o", str(out), "--preprocess", "donut",
           "--size", f"{size[0]}x{size[1]}", "--overwrite"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return out


def check_normalization(ds, size, device):
    out = {}
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for pad in ("random", "center"):
            kw = dict(batch_size=4, image_size=size, seed=11, pad=pad, dtype=dtype,
                      drop_last=False)
            cpu = [b["pixel_values"].clone() for b in docfeed.Loader(ds, **kw)]
            gpu = [b["pixel_values"].cpu() for b in docfeed.Loader(ds, device=device, **kw)]
            same = len(cpu) == len(gpu) and all(torch.equal(a, b) for a, b in zip(cpu, gpu))
            out[f"{str(dtype).replace('torch.', '')}-{pad}"] = same
    out["all_equal"] = all(out.values())
    return out


def check_copy(nbytes, device):
    res = {}
    for pinned in (True, False):
        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
        dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
        dev.copy_(host, non_blocking=pinned)
        torch.cuda.synchronize()
        reps = 20
        t = time.perf_counter()
        for _ in range(reps):
            dev.copy_(host, non_blocking=pinned)
        torch.cuda.synchronize()
        res["pinned_GBps" if pinned else "pageable_GBps"] = nbytes * reps / (time.perf_counter() - t) / 1e9
    res["bytes"] = nbytes
    res["pinned_over_pageable"] = res["pinned_GBps"] / res["pageable_GBps"]
    return res


def donut(size, vocab, tiny):
    from transformers import (DonutSwinConfig, DonutSwinModel, MBartConfig, MBartForCausalLM,
                              VisionEncoderDecoderModel)

    if tiny:
        enc = DonutSwinConfig(image_size=list(size), patch_size=4, embed_dim=16, depths=[1, 1],
                              num_heads=[2, 2], window_size=4)
        d_model, layers, heads, ffn = 32, 1, 2, 64
    else:
        enc = DonutSwinConfig(image_size=list(size), patch_size=4, embed_dim=128,
                              depths=[2, 2, 14, 2], num_heads=[4, 8, 16, 32], window_size=10)
        d_model, layers, heads, ffn = 1024, 4, 16, 4096
    dec = MBartConfig(vocab_size=vocab, d_model=d_model, decoder_layers=layers,
                      decoder_attention_heads=heads, decoder_ffn_dim=ffn,
                      # transformers 5 sizes the decoder's cache by num_hidden_layers, which MBart
                      # maps to encoder_layers (no encoder is built here).
                      encoder_layers=layers,
                      max_position_embeddings=768, is_decoder=True, add_cross_attention=True,
                      is_encoder_decoder=False, scale_embedding=True, pad_token_id=1,
                      bos_token_id=0, eos_token_id=2)
    model = VisionEncoderDecoderModel(encoder=DonutSwinModel(enc), decoder=MBartForCausalLM(dec))
    model.config.decoder_start_token_id = 0
    model.config.pad_token_id = 1
    return model


class _Step:
    """The Donut-base training step both input paths feed: bf16 autocast on CUDA, AdamW, and on
    CUDA a pair of timing events around each step (its GPU time)."""

    def __init__(self, size, vocab, tiny, device):
        self.model = donut(size, vocab, tiny).to(device)
        self.model.train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-5)
        self.use_cuda = device.type == "cuda"
        self.autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=self.use_cuda)

    def __call__(self, pixels, labels):
        """One step: (its loss, its (start, end) CUDA events or None)."""
        events = None
        if self.use_cuda:
            events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            events[0].record()
        with self.autocast:
            loss = self.model(pixel_values=pixels, labels=labels).loss
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        if events:
            events[1].record()
        return loss, events


def check_training(ds, size, device, steps, batch, tiny):
    vocab = 57525
    step = _Step(size, vocab, tiny, device)
    loader = docfeed.Loader(ds, batch_size=batch, image_size=size, seed=0, drop_last=True,
                            device=device if device.type == "cuda" else None,
                            dtype=torch.float32, label_column="-")
    gen = torch.Generator().manual_seed(0)
    labels = torch.randint(3, vocab, (batch, 128), generator=gen).to(device)
    use_cuda = step.use_cuda
    waits, gpu_ms, step_events = [], [], []
    it, done, epoch = iter(loader), 0, 0
    warmup = 3
    t_start = None
    while done < steps + warmup:
        t0 = time.perf_counter()
        b = next(it, None)
        if b is None:
            epoch += 1
            loader.set_epoch(epoch)
            it = iter(loader)
            continue
        wait = time.perf_counter() - t0
        loss, events = step(b["pixel_values"], labels)
        if events:
            step_events.append(events)
        done += 1
        if done == warmup:
            if use_cuda:
                torch.cuda.synchronize()
            step_events.clear()
            t_start = time.perf_counter()
        elif done > warmup:
            waits.append(wait)
    if use_cuda:
        torch.cuda.synchronize()
        gpu_ms = [s.elapsed_time(e) for s, e in step_events]
    wall = time.perf_counter() - t_start
    out = {"steps": steps, "batch": batch, "size": list(size), "tiny_model": tiny,
           "params_M": sum(p.numel() for p in step.model.parameters()) / 1e6,
           "wall_s_per_step": wall / steps,
           "consumer_wait_ms_per_step": 1e3 * sum(waits) / len(waits),
           "consumer_wait_max_ms": 1e3 * max(waits), "last_loss": float(loss)}
    if use_cuda:
        out["gpu_busy_fraction"] = sum(gpu_ms) / 1e3 / wall
        out["gpu_ms_per_step"] = sum(gpu_ms) / len(gpu_ms)
        out["max_memory_GiB"] = torch.cuda.max_memory_allocated() / 2**30
    stats = loader.stats()
    out["loader_stats"] = {k: stats[k] for k in ("read", "decode", "pad_normalize", "buffer_wait",
                                                 "consumer_wait", "batches", "pool_bytes")}
    return out


def check_feed(src, size, threads_list, consumer_pages_per_s, min_seconds=3.0,
               preprocessed=None):
    """pages/s of docfeed.Loader (uint8 HWC, no consumer work) from the original pages and, when
    given, from the dataset packed with --preprocess donut, at each thread count."""
    with tempfile.TemporaryDirectory() as tmp:
        orig = pathlib.Path(tmp) / "orig"
        cmd = [docfeed.cli_path(), "pack", str(src), "-o", str(orig), "--overwrite"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        out = {"cpu_count": os.cpu_count(), "size": list(size)}
        for name, ds in (("original", orig), ("preprocessed", preprocessed)):
            if ds is None:
                continue
            for threads in threads_list:
                loader = docfeed.Loader(ds, batch_size=4, image_size=size, seed=0,
                                        drop_last=False, dtype="uint8", layout="hwc",
                                        num_threads=threads, label_column="-")
                for _ in loader:  # warm-up epoch: page cache, pools
                    pass
                pages, epoch, t = 0, 1, time.perf_counter()
                while time.perf_counter() - t < min_seconds:
                    loader.set_epoch(epoch)
                    for b in loader:
                        pages += b["pixel_values"].shape[0]
                    epoch += 1
                out[f"{name}_pages_per_s_{threads}_threads"] = pages / (time.perf_counter() - t)
                loader.close()
        if consumer_pages_per_s:
            out["training_consumes_pages_per_s"] = consumer_pages_per_s
            for name in ("original", "preprocessed"):
                rates = [v for k, v in out.items() if k.startswith(f"{name}_pages_per_s_")]
                if rates:
                    out[f"{name}_feed_over_consumption"] = max(rates) / consumer_pages_per_s
        return out


class _RecipeRows(torch.utils.data.Dataset):
    """The recipe's rows as `datasets` hands them to the Trainer's DataLoader when no format is
    set: the memory-mapped Arrow table's row turned into Python lists (pyarrow's to_pylist,
    what datasets' Python formatter calls), labels as a list of ints."""

    def __init__(self, path, labels):
        import pyarrow as pa

        self.path, self.labels, self.table = path, labels, None
        self.rows = pa.ipc.open_stream(pa.memory_map(str(path))).read_all().num_rows

    def __len__(self):
        return self.rows

    def __getitem__(self, i):
        import pyarrow as pa

        if self.table is None:  # opened in each worker process, as datasets maps its files
            self.table = pa.ipc.open_stream(pa.memory_map(str(self.path))).read_all()
        row = self.table.slice(i, 1).to_pylist()[0]
        return {"pixel_values": row["pixel_values"], "labels": self.labels}


def check_recipe(size, device, steps, batch, workers_list, pages=16):
    """The recipe's input path feeding the same Donut-base step: float32 pixel_values stored as
    nested lists (what datasets.map(DonutProcessor) + save_to_disk write), read through a torch
    DataLoader with transformers' default_data_collator at each num_workers. Emulated with
    pyarrow (the machine has no `datasets`): the same Arrow type and the same to_pylist per row.
    Per setting: seconds per step, the time the loop waits for input, the GPU busy fraction."""
    import numpy as np
    import pyarrow as pa
    from transformers import default_data_collator

    h, w = size
    vocab = 57525
    labels = torch.randint(3, vocab, (128,), generator=torch.Generator().manual_seed(0)).tolist()
    out = {"pages_stored": pages, "bytes_per_page": 4 * 3 * h * w}
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "recipe.arrow"
        page = np.random.default_rng(0).uniform(-1, 1, (3, h, w)).astype(np.float32)
        column = pa.array([page.tolist()], type=pa.list_(pa.list_(pa.list_(pa.float32()))))
        table = pa.table({"pixel_values": column})
        with pa.OSFile(str(path), "wb") as f, pa.ipc.new_stream(f, table.schema) as writer:
            for _ in range(pages):
                writer.write_table(table)
        step = _Step(size, vocab, device.type != "cuda", device)
        use_cuda = step.use_cuda
        for workers in workers_list:
            rows = _RecipeRows(path, labels)
            sampler = torch.utils.data.RandomSampler(
                rows, replacement=True, num_samples=batch * (steps + 8 * workers + 8))
            loader = torch.utils.data.DataLoader(rows, batch_size=batch, sampler=sampler,
                                                 num_workers=workers,
                                                 collate_fn=default_data_collator,
                                                 pin_memory=use_cuda)
            it = iter(loader)
            # Not counted: the first step (worker start-up) and, with workers, the batches they
            # prefetched meanwhile (prefetch_factor 2 each), so that what is timed is the
            # steady state; then at least `steps`, and 2 per worker.
            skip = 1 + 2 * workers
            timed = max(steps, 2 * workers)
            waits, events, t_start = [], [], None
            for k in range(skip + timed):
                t0 = time.perf_counter()
                b = next(it)
                if k == skip:
                    t_start = t0
                if k >= skip:
                    waits.append(time.perf_counter() - t0)
                _, timing = step(b["pixel_values"].to(device, non_blocking=True),
                                 b["labels"].to(device, non_blocking=True))
                if timing and k >= skip:
                    events.append(timing)
            if use_cuda:
                torch.cuda.synchronize()
            wall = time.perf_counter() - t_start
            res = {"steps_timed": timed, "steps_skipped": skip, "wall_s_per_step": wall / timed,
                   "input_wait_s_per_step": sum(waits) / timed}
            if use_cuda:
                gpu_s = sum(s.elapsed_time(e) for s, e in events) / 1e3
                res["gpu_busy_fraction"] = gpu_s / wall
            out[f"num_workers_{workers}"] = res
            del it, loader
    return out


def check_jpeg_decode(src, rounds=20):
    from torchvision.io import decode_jpeg

    files = sorted(p for p in pathlib.Path(src).rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    data = [torch.frombuffer(bytearray(p.read_bytes()), dtype=torch.uint8) for p in files]
    cpu = [decode_jpeg(d, device="cpu") for d in data]
    megapixels = sum(img.shape[1] * img.shape[2] for img in cpu) / 1e6
    torch.set_num_threads(1)
    t = time.perf_counter()
    for _ in range(rounds):
        for d in data:
            decode_jpeg(d, device="cpu")
    cpu_s = (time.perf_counter() - t) / rounds
    gpu = decode_jpeg(data, device="cuda")  # warm-up (nvJPEG handles, allocations)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(rounds):
        decode_jpeg(data, device="cuda")
    torch.cuda.synchronize()
    gpu_s = (time.perf_counter() - t) / rounds
    diffs = [(a.int() - b.cpu().int()).abs() for a, b in zip(cpu, gpu) if a.shape == b.shape]
    return {"files": len(files), "megapixels": megapixels,
            "cpu_1core_pages_per_s": len(files) / cpu_s, "gpu_pages_per_s": len(files) / gpu_s,
            "gpu_over_cpu_1core": cpu_s / gpu_s,
            "same_shape": len(diffs) == len(files),
            "max_abs_diff": max(int(d.max()) for d in diffs),
            "mean_abs_diff": sum(float(d.float().mean()) for d in diffs) / len(diffs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO / "tests" / "data" / "sample-docs"),
                    help="an image folder to pack (default: the repo's sample documents)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", default="1553x1200")
    ap.add_argument("--checks", default="normalization,copy,training,feed,jpeg_decode,recipe",
                    help="the checks to run, comma-separated (default: all)")
    ap.add_argument("--recipe-steps", type=int, default=3,
                    help="steps per num_workers setting of the recipe's input path (0: skip)")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="without CUDA: run the training part with a tiny model on the CPU")
    args = ap.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    result = {"cuda": torch.cuda.is_available(), "torch": torch.__version__,
              "docfeed": docfeed.__version__}
    checks = set(args.checks.split(","))

    def run(name, fn, *a):
        """One check; a failure is recorded under its name and the others still run."""
        if name not in checks:
            return
        t = time.perf_counter()
        try:
            result[name] = fn(*a)
        except Exception as e:  # noqa: BLE001 -- report every check, whatever breaks one
            result[name] = {"error": f"{type(e).__name__}: {e}"}
        print(f"[{name}: {time.perf_counter() - t:.1f} s]", json.dumps(result[name]),
              file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        if result["cuda"]:
            device = torch.device("cuda")
            result["device_name"] = torch.cuda.get_device_name(device)
            ds = pack(args.data, pathlib.Path(tmp) / "ds", size)
            run("normalization", check_normalization, ds, size, device)
            run("copy", check_copy, args.batch * 3 * size[0] * size[1], device)
            run("training", check_training, ds, size, device, args.steps, args.batch, False)
            step = result.get("training", {}).get("wall_s_per_step")
            cores = os.cpu_count() or 1
            run("feed", check_feed, args.data, size, sorted({1, min(4, cores), cores}),
                args.batch / step if step else None, 3.0, ds)
            run("jpeg_decode", check_jpeg_decode, args.data)
            if args.recipe_steps:
                run("recipe", check_recipe, size, device, args.recipe_steps, args.batch,
                    sorted({0, min(8, cores)}))
        elif args.cpu_smoke:
            size = (64, 48)
            ds = pack(args.data, pathlib.Path(tmp) / "ds", size)
            run("training", check_training, ds, size, torch.device("cpu"), 3, 2, True)
            run("feed", check_feed, args.data, size, [1, 2], None, 0.5)
            run("recipe", check_recipe, size, torch.device("cpu"), 1, 2, [0, 1], 4)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

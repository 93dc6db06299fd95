#!/usr/bin/env python3
"""One short GPU check of docfeed's Python front; prints one JSON object.

Run on a machine with a CUDA GPU, in the venv that has docfeed installed (`make python-install`
puts it in .venv/train):

    .venv/train/bin/python bench/gpu/gpu_check.py [--steps 20] [--batch 4] [--data DIR]

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
Without CUDA it prints {"cuda": false, ...} and, with --cpu-smoke, runs the training part with a
tiny model on the CPU (to check the script itself).
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
                      decoder_attention_heads=heads, decoder_ffn_dim=ffn, encoder_layers=1,
                      max_position_embeddings=768, is_decoder=True, add_cross_attention=True,
                      is_encoder_decoder=False, scale_embedding=True, pad_token_id=1,
                      bos_token_id=0, eos_token_id=2)
    model = VisionEncoderDecoderModel(encoder=DonutSwinModel(enc), decoder=MBartForCausalLM(dec))
    model.config.decoder_start_token_id = 0
    model.config.pad_token_id = 1
    return model


def check_training(ds, size, device, steps, batch, tiny):
    vocab = 57525
    model = donut(size, vocab, tiny).to(device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    loader = docfeed.Loader(ds, batch_size=batch, image_size=size, seed=0, drop_last=True,
                            device=device if device.type == "cuda" else None,
                            dtype=torch.float32, label_column="-")
    gen = torch.Generator().manual_seed(0)
    labels = torch.randint(3, vocab, (batch, 128), generator=gen).to(device)
    use_cuda = device.type == "cuda"
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_cuda)
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
        if use_cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        with autocast:
            loss = model(pixel_values=b["pixel_values"], labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if use_cuda:
            end.record()
            step_events.append((start, end))
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
           "params_M": sum(p.numel() for p in model.parameters()) / 1e6,
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO / "tests" / "data" / "sample-docs"),
                    help="an image folder to pack (default: the repo's sample documents)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--size", default="1553x1200")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="without CUDA: run the training part with a tiny model on the CPU")
    args = ap.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    result = {"cuda": torch.cuda.is_available(), "torch": torch.__version__,
              "docfeed": docfeed.__version__}
    with tempfile.TemporaryDirectory() as tmp:
        if result["cuda"]:
            device = torch.device("cuda")
            result["device_name"] = torch.cuda.get_device_name(device)
            ds = pack(args.data, pathlib.Path(tmp) / "ds", size)
            result["normalization"] = check_normalization(ds, size, device)
            result["copy"] = check_copy(args.batch * 3 * size[0] * size[1], device)
            result["training"] = check_training(ds, size, device, args.steps, args.batch, False)
        elif args.cpu_smoke:
            size = (64, 48)
            ds = pack(args.data, pathlib.Path(tmp) / "ds", size)
            result["training"] = check_training(ds, size, torch.device("cpu"), 3, 2, True)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Consumer wait per training step: the Donut recipe's input pipeline vs docfeed.Loader.

One run, same machine, same tiny random-initialized Donut (DonutSwin + MBart) training on the
CPU at 1553 x 1200, batch 2. Measured for each pipeline: the seconds the training loop spends
in next(iterator) per step (the "consumer wait"), over `--steps` steps after one warm-up step,
and the model step's own time (the time background workers have to prepare the next batch).

  recipe-w0   the public fine-tuning recipe: DonutImageProcessor run by dataset.map() into float32
              pixel_values, save_to_disk, load_from_disk (no format set, as the recipe), and a
              torch DataLoader with the default collator, num_workers=0
  recipe-w2   the same with num_workers=2
  docfeed-orig      docfeed.Loader on a dataset of the original images (the whole preset on the fly)
  docfeed-pre       docfeed.Loader on a `--preprocess donut` dataset

    .venv/train/bin/python bench/python/consumer_wait.py [--samples 8] [--steps 6]

Prints a table and JSON with the ratios to recipe-w0. Writes temporary data under --tmp.
"""
import argparse
import json
import pathlib
import subprocess
import tempfile
import time

import torch

import docfeed

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"
SIZE = (1553, 1200)


def tiny_donut():
    from transformers import (DonutSwinConfig, DonutSwinModel, MBartConfig, MBartForCausalLM,
                              VisionEncoderDecoderModel)

    torch.manual_seed(0)
    enc = DonutSwinModel(DonutSwinConfig(image_size=list(SIZE), patch_size=4, embed_dim=16,
                                         depths=[1, 1], num_heads=[2, 2], window_size=10))
    dec = MBartForCausalLM(MBartConfig(vocab_size=1000, d_model=32, decoder_layers=1,
                                       decoder_attention_heads=2, decoder_ffn_dim=64,
                                       max_position_embeddings=600, is_decoder=True,
                                       add_cross_attention=True, is_encoder_decoder=False))
    model = VisionEncoderDecoderModel(encoder=enc, decoder=dec)
    model.config.decoder_start_token_id = 0
    model.config.pad_token_id = 1
    return model


def recipe_dataset(files, out):
    """The recipe's preprocessing: processor in dataset.map(), float32 pixel_values, 512 labels."""
    import datasets
    from PIL import Image
    from transformers import DonutImageProcessor

    proc = DonutImageProcessor(size={"height": SIZE[0], "width": SIZE[1]})
    gen = torch.Generator().manual_seed(0)

    def rows():
        for path in files:
            with Image.open(path) as img:
                pixels = proc(img, random_padding=True, return_tensors="np")["pixel_values"][0]
            labels = torch.randint(3, 1000, (512,), generator=gen).tolist()
            yield {"pixel_values": pixels, "labels": labels}

    ds = datasets.Dataset.from_generator(rows, features=datasets.Features({
        "pixel_values": datasets.Array3D((3, *SIZE), "float32"),
        "labels": datasets.Sequence(datasets.Value("int64"))}))
    ds.save_to_disk(str(out))
    return out


def measure(batches, model, opt, steps):
    """Runs warm-up + `steps` training steps; returns the mean/max consumer wait (s)."""
    it = iter(batches)
    waits, computes = [], []
    for step in range(steps + 1):
        t0 = time.perf_counter()
        batch = next(it)
        wait = time.perf_counter() - t0
        t1 = time.perf_counter()
        pixel_values = torch.as_tensor(batch["pixel_values"])
        labels = torch.as_tensor(batch["labels"])
        loss = model(pixel_values=pixel_values, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        del batch, pixel_values, labels
        if step > 0:
            waits.append(wait)
            computes.append(time.perf_counter() - t1)
    return sum(waits) / len(waits), max(waits), sum(computes) / len(computes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--tmp", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    import datasets
    from torch.utils.data import DataLoader

    rows = [json.loads(l) for l in (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()]
    files = [SAMPLE_DOCS / r["file_name"] for r in rows][:args.samples]
    need = (args.steps + 1) * args.batch
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        tmp = pathlib.Path(tmp)
        t = time.perf_counter()
        recipe = recipe_dataset(files, tmp / "recipe")
        recipe_prep_s = time.perf_counter() - t
        folder = tmp / "src"
        folder.mkdir()
        with open(folder / "metadata.jsonl", "w") as meta:
            for i, f in enumerate(files):
                (folder / f"{i:03d}{f.suffix}").write_bytes(f.read_bytes())
                meta.write(json.dumps({"file_name": f"{i:03d}{f.suffix}"}) + "\n")
        cli = docfeed.cli_path()
        subprocess.run([cli, "pack", str(folder), "-o", str(tmp / "orig")], check=True,
                       capture_output=True)
        subprocess.run([cli, "pack", str(folder), "-o", str(tmp / "pre"), "--preprocess",
                        "donut", "--size", f"{SIZE[0]}x{SIZE[1]}"], check=True,
                       capture_output=True)
        results = {}
        for name in ("recipe-w0", "recipe-w2", "docfeed-orig", "docfeed-pre"):
            model = tiny_donut()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
            if name.startswith("recipe"):
                ds = datasets.load_from_disk(str(recipe))
                repeat = torch.utils.data.ConcatDataset([ds] * (need // len(ds) + 1))
                workers = int(name[-1])
                batches = DataLoader(repeat, batch_size=args.batch, shuffle=True,
                                     num_workers=workers,
                                     collate_fn=None)
                # The default collator of a no-format dataset: nested lists -> tensors.
                from transformers import default_data_collator

                batches.collate_fn = default_data_collator
            else:
                loader = docfeed.Loader(tmp / name.split("-")[1], batch_size=args.batch,
                                        image_size=SIZE, num_threads=2, label_column="-",
                                        prefetch=2)

                def forever(loader=loader):
                    gen = torch.Generator().manual_seed(0)
                    while True:
                        for b in loader:
                            b["labels"] = torch.randint(3, 1000, (args.batch, 512),
                                                        generator=gen)
                            yield b
                batches = forever()
            mean, worst, compute = measure(batches, model, opt, args.steps)
            results[name] = {"wait_s_per_step": mean, "wait_max_s": worst,
                             "compute_s_per_step": compute}
            del batches
        base = results["recipe-w0"]["wait_s_per_step"]
        for r in results.values():
            r["ratio_vs_recipe_w0"] = r["wait_s_per_step"] / base
        print(f"{'pipeline':14s} {'wait/step (s)':>14s} {'max (s)':>9s} {'vs recipe-w0':>13s}"
              f" {'model step (s)':>15s}")
        for name, r in results.items():
            print(f"{name:14s} {r['wait_s_per_step']:14.4f} {r['wait_max_s']:9.4f} "
                  f"{r['ratio_vs_recipe_w0']:13.4f} {r['compute_s_per_step']:15.3f}")
        print(json.dumps({"samples": len(files), "batch": args.batch, "steps": args.steps,
                          "recipe_preprocess_s": recipe_prep_s, "results": results}))


if __name__ == "__main__":
    main()

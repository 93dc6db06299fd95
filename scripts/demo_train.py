#!/usr/bin/env python3
"""`make demo`: the Donut recipe's input pipeline against docfeed, on this machine, end to end.

1. `docfeed synth` renders a few hundred invoices with their ground truth (an imagefolder).
2. A small XLM-R-style SentencePiece tokenizer is trained on their text (no download: the real
   Donut tokenizer cannot be fetched here), then `docfeed pack --tokenizer` packs the original
   images with the recipe's `labels`; `docfeed verify` re-checks it.
3. The recipe of docs/context.md builds its dataset exactly as the public notebook does:
   json2token targets, a DonutProcessor (DonutImageProcessor + the same tokenizer, new special
   tokens added) run by `datasets.map` into float32 `pixel_values` + 512 `labels`, `save_to_disk`,
   no format set. Its labels are compared with docfeed's, token for token.
4. The same small random-initialized Donut-architecture model (VisionEncoderDecoderModel:
   DonutSwin encoder + MBart decoder, tiny config) is trained by the Hugging Face
   Seq2SeqTrainer for the same number of steps on the same data: the recipe's way
   (`load_from_disk`, the Trainer's default DataLoader and collator, `dataloader_num_workers=0`,
   then again with 2 workers, the user's question) and fed by docfeed
   (`docfeed.hf.Seq2SeqTrainer` + `DocfeedDataset`: original images preprocessed on the fly
   with fresh random padding). Measured per optimizer step: the time the Trainer spends in
   `get_batch_samples` (its `next()` on the train dataloader: for the recipe, reading and
   collating the batch; for docfeed, waiting for a batch its threads prepared) and the step's
   wall time (between consecutive `on_step_end` callbacks); the first step (start-up) is left
   out. CPU time: the whole train() call, this process and its DataLoader workers.
   One torch thread: the tiny model's ops are too small to share, and the other core is left
   to the input pipeline.
5. `docfeed doctor` measures the recipe's pipeline on a small full-size (1553x1200) recipe
   dataset and estimates, for the user's job (16,000 invoices, 6 epochs, batch 8, an H100),
   how busy the GPU is and how long the job takes, with the recipe and with docfeed.

The pages are trained at a reduced size by default (--size, the same on both sides: a tiny
model at 1553x1200 takes seconds per step on 2 CPU cores); step 5 measures the full size.
Output: a table on stdout, out/demo/report.md, out/demo/demo.png, out/demo/results.json.

    .venv/train/bin/python scripts/demo_train.py [--n 200] [--size 388x300] [--steps 15]
        [--recipe-workers 0 2] [--quick] [--no-doctor]

The docfeed CLI is the installed package's (`docfeed.cli_path()`; DOCFEED_CLI overrides it).
"""
import argparse
import json
import math
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
FULL_SIZE = (1553, 1200)  # the recipe's (height, width)
TASK_TOKEN, EOS_TOKEN = "<s>", "</s>"  # the notebook's start and end tokens
MAX_LENGTH = 512  # the recipe's label length


# ---------------------------------------------------------------- small helpers

def say(text=""):
    print(text, flush=True)


def header(text):
    say()
    say(f"== {text}")


def dir_bytes(path):
    path = pathlib.Path(path)
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_cli(*args, quiet=False):
    """Runs the docfeed CLI, echoing its output unless quiet; returns (stdout, seconds)."""
    import docfeed

    cmd = [docfeed.cli_path(), *map(str, args)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"demo: `docfeed {' '.join(map(str, args))}` failed ({proc.returncode}):\n"
                 f"{proc.stdout}\n{proc.stderr}")
    if not quiet:
        for line in proc.stdout.rstrip().splitlines():
            say("  " + line)
    return proc.stdout, seconds


def parse_size(text):
    height, width = (int(v) for v in text.lower().split("x"))
    return height, width


# ---------------------------------------------------------------- tokenizer and targets

def json2token(obj, new_tokens, sort_json_key=True):
    """The public notebook's json2token (Donut fine-tuning recipe): dict keys in reverse order
    as <s_k>...</s_k> (both tags collected as new special tokens), lists joined by <sep/>."""
    if type(obj) == dict:
        if len(obj) == 1 and "text_sequence" in obj:
            return obj["text_sequence"]
        output = ""
        keys = sorted(obj.keys(), reverse=True) if sort_json_key else obj.keys()
        for k in keys:
            for tag in (fr"<s_{k}>", fr"</s_{k}>"):
                if tag not in new_tokens:
                    new_tokens.append(tag)
            output += fr"<s_{k}>" + json2token(obj[k], new_tokens, sort_json_key) + fr"</s_{k}>"
        return output
    if type(obj) == list:
        return r"<sep/>".join(json2token(item, new_tokens, sort_json_key) for item in obj)
    obj = str(obj)
    if f"<{obj}/>" in new_tokens:
        obj = f"<{obj}/>"
    return obj


def recipe_targets(folder):
    """(target sequences in metadata order, new special tokens) as the notebook builds them."""
    new_tokens, targets = [], []
    for line in (folder / "metadata.jsonl").read_text().splitlines():
        gt = json.loads(json.loads(line)["ground_truth"])
        targets.append(TASK_TOKEN + json2token(gt["gt_parse"], new_tokens) + EOS_TOKEN)
    return targets, new_tokens + [TASK_TOKEN, EOS_TOKEN]


def train_sentencepiece(folder, out_dir, vocab_size):
    """A SentencePiece model on the documents' text, saved as sentencepiece.bpe.model (the file
    name XLM-R / Donut tokenizers ship), so XLMRobertaTokenizer(Fast) and `docfeed pack
    --tokenizer` read the same model. Stands in for Donut's 57k-piece model, which despite the
    file name is a Unigram model: so is this one (transformers 5 builds every XLM-R tokenizer
    as Unigram, so only a Unigram model gives the same ids in 4.x and 5.x)."""
    import sentencepiece as spm

    out_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in (folder / "metadata.jsonl").read_text().splitlines():
        gt = json.loads(json.loads(line)["ground_truth"])["gt_parse"]
        stack = [gt]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
            else:
                lines.append(str(value))
    corpus = out_dir / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(out_dir / "m"),
                                   model_type="unigram", vocab_size=vocab_size,
                                   hard_vocab_limit=False, character_coverage=1.0,
                                   minloglevel=2)
    (out_dir / "m.model").rename(out_dir / "sentencepiece.bpe.model")
    return out_dir


def recipe_processor(tokenizer_dir, size, new_tokens):
    """The notebook's DonutProcessor, built offline: DonutImageProcessor at `size` with
    do_align_long_axis=False (the Hub config's other defaults: BILINEAR, thumbnail, pad,
    mean = std = 0.5) and the XLM-R fast tokenizer with the new special tokens added.

    transformers 5: the tokenizer is loaded with from_pretrained (5.x's
    XLMRobertaTokenizerFast(vocab_file=...) ignores the file and maps every piece to <unk>), and
    do_convert_rgb=True (5.x's default None passes grayscale pages on with one channel, and its
    normalize then fails on them)."""
    import transformers
    from transformers import DonutImageProcessor, DonutProcessor, XLMRobertaTokenizerFast

    tokenizer = XLMRobertaTokenizerFast.from_pretrained(str(tokenizer_dir))
    tokenizer.add_special_tokens({"additional_special_tokens": new_tokens})
    extra = {"do_convert_rgb": True} if int(transformers.__version__.split(".")[0]) >= 5 else {}
    image_processor = DonutImageProcessor(size={"height": size[0], "width": size[1]},
                                          do_align_long_axis=False, **extra)
    return DonutProcessor(image_processor=image_processor, tokenizer=tokenizer)


# ---------------------------------------------------------------- the recipe's dataset

def random_padding_reaches_processor(processor, image):
    """Whether `processor(image, random_padding=True)` passes the flag on: some transformers
    versions (4.57.6 among them) drop it with a warning, so the recipe's "random padding" is
    centred padding (docs/donut-preprocessing.md section 6). Detected from that warning; 5.x
    refuses the keyword (TypeError), so its recipe calls the processor without it."""
    import logging

    messages = []

    class Catch(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    logger = logging.getLogger("transformers")
    handler = Catch(level=logging.WARNING)
    logger.addHandler(handler)
    try:
        processor(image, random_padding=True, return_tensors="np")
    except TypeError:
        return False
    finally:
        logger.removeHandler(handler)
    return not any("random_padding" in m for m in messages)


def build_recipe_dataset(folder, out, processor, targets, cache_dir, limit=None,
                         random_padding=True):
    """The notebook's preprocessing: imagefolder -> map(processor) -> save_to_disk.

    pixel_values: the processor's float32 (3, H, W) with random_padding (train split), frozen at
    map time; labels: 512 ids, pad -> -100; target_sequence kept. No format is set.
    random_padding=False: the call without the keyword (transformers 5 refuses it)."""
    import datasets

    ds = datasets.load_dataset("imagefolder", data_dir=str(folder), split="train",
                               cache_dir=str(cache_dir))
    if limit is not None:
        ds = ds.select(range(limit))
        targets = targets[:limit]
    ds = ds.add_column("text", targets)
    tokenizer = processor.tokenizer

    def transform_and_tokenize(sample):
        pad = {"random_padding": True} if random_padding else {}
        pixel_values = processor(sample["image"], return_tensors="pt",
                                 **pad).pixel_values.squeeze()
        input_ids = tokenizer(sample["text"], add_special_tokens=False, max_length=MAX_LENGTH,
                              padding="max_length", truncation=True,
                              return_tensors="pt")["input_ids"].squeeze(0)
        labels = input_ids.clone()
        labels[labels == tokenizer.pad_token_id] = -100
        return {"pixel_values": pixel_values, "labels": labels, "target_sequence": sample["text"]}

    ds = ds.map(transform_and_tokenize, remove_columns=["image", "text", "ground_truth"])
    if out.exists():
        shutil.rmtree(out)
    ds.save_to_disk(str(out))
    return out


# ---------------------------------------------------------------- model and training

def tiny_donut(vocab_size, size, seed=0):
    """A random-initialized Donut-architecture model, tiny: DonutSwin (patch 4, window 10 as
    donut-base; embed 8, two stages of depth 1) and a 1-layer MBart decoder (d_model 32) with
    cross-attention, the recipe's vocabulary and 512 positions."""
    import torch
    from transformers import (DonutSwinConfig, DonutSwinModel, MBartConfig, MBartForCausalLM,
                              VisionEncoderDecoderModel)

    torch.manual_seed(seed)
    window = 10 if min(size) >= 160 else 4  # --quick's tiny pages: smaller than one window
    encoder = DonutSwinModel(DonutSwinConfig(
        image_size=list(size), patch_size=4, num_channels=3, embed_dim=8, depths=[1, 1],
        num_heads=[1, 2], window_size=window, mlp_ratio=2.0, drop_path_rate=0.0))
    decoder = MBartForCausalLM(MBartConfig(
        vocab_size=vocab_size, d_model=32, decoder_layers=1, decoder_attention_heads=2,
        decoder_ffn_dim=64, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=64,
        max_position_embeddings=MAX_LENGTH + 8, dropout=0.0, attention_dropout=0.0,
        is_decoder=True, add_cross_attention=True, is_encoder_decoder=False, scale_embedding=True,
        pad_token_id=1, bos_token_id=0, eos_token_id=2))
    model = VisionEncoderDecoderModel(encoder=encoder, decoder=decoder)
    model.config.decoder_start_token_id = 0  # <s>, as the notebook sets it
    model.config.pad_token_id = 1  # <pad>
    return model


def make_timed_trainer(base):
    """A subclass of trainer class `base` that records, per optimizer step, the seconds spent in
    get_batch_samples (the Trainer's next() on its train dataloader), the time the step ended,
    the loss of every batch, and the samples trained."""
    import transformers

    class Timed(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.fetch = []  # (start, seconds) per get_batch_samples call
            self.step_ends = []
            self.losses = []
            self.samples = 0
            trainer = self

            class StepEnd(transformers.TrainerCallback):
                def on_step_end(self, args, state, control, **kwargs):
                    trainer.step_ends.append(time.perf_counter())

            self.add_callback(StepEnd())
            self.remove_callback(transformers.trainer_callback.PrinterCallback)

        def get_batch_samples(self, epoch_iterator, num_batches, device):
            start = time.perf_counter()
            out = super().get_batch_samples(epoch_iterator, num_batches, device)
            self.fetch.append((start, time.perf_counter() - start))
            return out

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            if model.training:
                self.samples += int(inputs["pixel_values"].shape[0])
                self.losses.append(float((loss[0] if return_outputs else loss).detach()))
            return loss

    return Timed


def training_args(out_dir, steps, batch, workers):
    """The recipe's Seq2SeqTrainingArguments (batch 8, lr 2e-5, weight decay 0.01, workers 0),
    for a fixed number of steps on the CPU: fp32 (no fp16 on CPU) and no checkpoints."""
    from transformers import Seq2SeqTrainingArguments

    return Seq2SeqTrainingArguments(
        output_dir=str(out_dir), per_device_train_batch_size=batch, max_steps=steps,
        learning_rate=2e-5, weight_decay=0.01, dataloader_num_workers=workers,
        save_strategy="no", logging_strategy="no", report_to=[], use_cpu=True, seed=0,
        disable_tqdm=True, predict_with_generate=False)


def cpu_seconds():
    """CPU time of this process (its threads: docfeed's) and its waited-for children (DataLoader
    workers, joined when their iterator ends), user + system."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed_train(trainer):
    """trainer.train(); returns (wall seconds, CPU seconds) of the whole call."""
    import gc

    wall, cpu = time.perf_counter(), cpu_seconds()
    trainer.train()
    gc.collect()  # drop the epoch iterator: DataLoader workers exit and are joined
    return time.perf_counter() - wall, cpu_seconds() - cpu


def summarize(name, trainer, batch, wall, cpu):
    """Steps 2..N: samples/s and the fraction of the steps' wall time spent in fetching input."""
    ends = trainer.step_ends
    fetch = trainer.fetch
    steps = len(ends)
    span = ends[-1] - ends[0] if steps > 1 else float("nan")
    waits = [seconds for _, seconds in fetch[1:steps]]
    wait = sum(waits)
    return {
        "name": name, "steps": steps, "samples": trainer.samples,
        "measured_steps": steps - 1,
        "samples_per_s": batch * (steps - 1) / span if steps > 1 else float("nan"),
        "step_s": span / (steps - 1) if steps > 1 else float("nan"),
        "wait_s_per_step": wait / max(1, len(waits)),
        "wait_fraction": wait / span if steps > 1 else float("nan"),
        "first_step_s": ends[0] - fetch[0][0],
        "first_fetch_s": fetch[0][1],
        "losses": trainer.losses,
        "train_wall_s": wall,
        "cpu_s_per_sample": cpu / max(1, trainer.samples),
    }


def train_recipe(recipe_dir, vocab, size, steps, batch, workers, out_dir):
    import datasets
    from transformers import Seq2SeqTrainer

    ds = datasets.load_from_disk(str(recipe_dir))  # no format set, as the recipe
    trainer = make_timed_trainer(Seq2SeqTrainer)(
        model=tiny_donut(vocab, size), args=training_args(out_dir, steps, batch, workers),
        train_dataset=ds)
    return summarize(f"recipe (workers={workers})", trainer, batch, *timed_train(trainer))


def train_docfeed(docfeed_dir, vocab, size, steps, batch, out_dir):
    import docfeed.hf

    trainer = make_timed_trainer(docfeed.hf.Seq2SeqTrainer)(
        model=tiny_donut(vocab, size), args=training_args(out_dir, steps, batch, 0),
        train_dataset=docfeed.hf.DocfeedDataset(docfeed_dir, image_size=size))
    return summarize("docfeed", trainer, batch, *timed_train(trainer))


# ---------------------------------------------------------------- docfeed doctor

def doctor_command():
    """`python -m docfeed doctor`: the installed package's CLI (DOCFEED_CLI overrides it)."""
    return [sys.executable, "-m", "docfeed", "doctor"]


def run_doctor(sample_dir, out_json, max_seconds):
    cmd = doctor_command() + [str(sample_dir), "--batch-size", "8", "--gpu", "h100",
                              "--assume-samples", "16000", "--epochs", "6",
                              "--max-seconds", str(max_seconds), "--json", str(out_json)]
    say("  $ " + " ".join(["docfeed", "doctor"] + cmd[len(doctor_command()):]))
    out_json.unlink(missing_ok=True)
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=max_seconds * 4 + 120)
    except subprocess.TimeoutExpired:
        return None, "timed out", time.perf_counter() - start
    seconds = time.perf_counter() - start
    out_json.with_suffix(".txt").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not out_json.exists():
        why = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        if why and why[0].startswith("Traceback"):
            why = why[-1:]
        return None, (why[0] if why else f"exit status {proc.returncode}"), seconds
    try:
        return json.loads(out_json.read_text()), None, seconds
    except ValueError as e:
        return None, f"unreadable JSON ({e})", seconds


def is_docfeed(pipeline):
    return pipeline.get("kind") == "docfeed" or pipeline["name"].startswith("docfeed")


def hours(seconds):
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min"


# ---------------------------------------------------------------- report

def write_chart(path, title, runs, sizes, doctor):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 4 if doctor else 3
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 3.6))
    names = [r["name"].replace(" (", "\n(") for r in runs]
    colors = ["#c0504d" if r["name"].startswith("recipe") else "#4f81bd" for r in runs]
    axes[0].bar(names, [r["samples_per_s"] for r in runs], color=colors)
    axes[0].set_title("training samples/s (CPU, tiny model)")
    axes[1].bar(names, [100 * r["wait_fraction"] for r in runs], color=colors)
    axes[1].set_title("% of each step waiting for input")
    axes[1].set_ylim(0, 100)
    axes[2].bar(["recipe\nfloat32", "docfeed"], [sizes["recipe"] / 1e6, sizes["docfeed"] / 1e6],
                color=["#c0504d", "#4f81bd"])
    axes[2].set_title("dataset on disk (MB)")
    if doctor:
        import textwrap

        pipes = doctor["pipelines"]
        axes[3].bar([textwrap.fill(p["name"], 18) for p in pipes],
                    [p["job_s"] / 3600 for p in pipes],
                    color=["#4f81bd" if is_docfeed(p) else "#c0504d" for p in pipes])
        axes[3].set_yscale("log")
        axes[3].set_title("doctor: 16k invoices x 6 epochs, H100 (h)")
    for ax in axes:
        ax.tick_params(axis="x", labelsize=8)
        for bars in ax.containers:
            ax.bar_label(bars, fmt="%.3g", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report_lines(meta, runs, sizes, doctor, doctor_error):
    size = meta["size"]
    lines = [
        "# make demo: the Donut recipe's input pipeline vs docfeed",
        "",
        f"Machine: {meta['machine']}; load average at start {meta['load_start']}, "
        f"at the end {meta['load_end']}. Demo wall time {meta['wall_s']:.0f} s.",
        "",
        f"{meta['n']} synthetic invoices (`docfeed synth --kind invoice --dpi {meta['dpi']}`). "
        f"Every run: the same random-initialized tiny Donut (DonutSwin + MBart), Hugging Face "
        f"Seq2SeqTrainer, batch {meta['batch']}, {meta['steps']} steps, on the CPU "
        f"(torch threads: {meta['torch_threads']}); pages at {size[0]}x{size[1]} "
        f"(height x width) on both sides"
        + ("" if tuple(size) == FULL_SIZE else
           f", reduced from the recipe's 1553x1200 so a CPU step takes seconds") + ".",
        "Figures are over steps 2..N (step 1 includes start-up). Input wait = time in the "
        "Trainer's get_batch_samples (its next() on the train dataloader) / the steps' wall time. "
        "CPU s per sample: the whole train() call, every thread and DataLoader worker process, "
        "over the samples trained (the model's own CPU work included: it runs on the CPU here).",
        "",
        "| pipeline | samples/s | step (s) | input wait per step (s) | input wait | "
        "CPU s per sample | dataset on disk | samples trained | final loss |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        disk = sizes["recipe"] if r["name"].startswith("recipe") else sizes["docfeed"]
        lines.append(f"| {r['name']} | {r['samples_per_s']:.2f} | {r['step_s']:.2f} | "
                     f"{r['wait_s_per_step']:.3f} | {100 * r['wait_fraction']:.1f} % | "
                     f"{r['cpu_s_per_sample']:.3f} | {disk / 1e6:.1f} MB | {r['samples']} | "
                     f"{r['losses'][-1]:.3f} |")
    base = runs[0]
    lines.append("")
    for r in runs[1:]:
        speed = r["samples_per_s"] / base["samples_per_s"]
        less_wait = base["wait_s_per_step"] / max(r["wait_s_per_step"], 1e-9)
        cpu = r["cpu_s_per_sample"] / base["cpu_s_per_sample"]
        lines.append(f"- {r['name']} vs {base['name']}: {speed:.2f}x the samples/s, "
                     f"{less_wait:.0f}x less input wait per step, {cpu:.2f}x the CPU time per "
                     f"sample.")
    if any(r["name"].startswith("recipe (workers=") and not r["name"].endswith("=0)")
           for r in runs):
        lines.append("- Workers hide the recipe's wait by running the same float-list conversion "
                     "in other processes: it still costs its CPU time (and a copy of the batch "
                     "per worker), taken from the cores the training step uses when they are few.")
    lines += ["",
              f"Dataset on disk: the recipe's float32 save_to_disk at {size[0]}x{size[1]}: "
              f"{sizes['recipe'] / 1e6:.1f} MB ({sizes['recipe'] / meta['n'] / 1e6:.2f} MB a "
              f"page; 22.4 MB a page at 1553x1200); docfeed's original images with labels: "
              f"{sizes['docfeed'] / 1e6:.1f} MB ({sizes['docfeed'] / meta['n'] / 1e3:.0f} KB a "
              f"page, whatever the training size), {sizes['recipe'] / sizes['docfeed']:.1f}x "
              f"smaller.",
              f"Preparation: recipe map + save_to_disk {meta['recipe_prep_s']:.1f} s; "
              f"docfeed pack {meta['pack_s']:.1f} s. Labels: {meta['labels_match']}."]
    lines += ["", "## What it means for the recipe's full job on a GPU (`docfeed doctor`)", ""]
    if doctor is None:
        lines.append(f"docfeed doctor unavailable: {doctor_error}.")
    else:
        gpu = doctor.get("gpu", {})
        shape = "x".join(map(str, doctor.get("image_size") or ["?"]))
        lines += [f"`docfeed doctor` on {doctor['samples']} recipe pages at {shape} float32 "
                  f"({doctor['bytes_per_sample'] / 1e6:.1f} MB a page), estimated for "
                  f"{doctor['assume_samples']} invoices x {doctor['epochs']} epochs, batch "
                  f"{doctor['batch_size']}, GPU step {gpu.get('step_s', float('nan')):.3f} s "
                  f"({gpu.get('device', '?')}, {gpu.get('source', '?')}):", "",
                  "| pipeline | seconds per batch | GPU busy | epoch | job |",
                  "|---|---:|---:|---:|---:|"]
        for p in doctor["pipelines"]:
            lines.append(f"| {p['name']} | {p['batch_s']:.3f} | {100 * p['gpu_busy']:.1f} % | "
                         f"{hours(p['epoch_s'])} | {hours(p['job_s'])} |")
        if doctor.get("pathologies"):
            lines += ["", "Found:"] + [f"- `{p['id']}`: {p['message']}"
                                       for p in doctor["pathologies"]]
        if doctor.get("fix"):
            lines += ["", "Fix: " + doctor["fix"]]
    return lines


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(REPO / "out" / "demo"))
    ap.add_argument("--n", type=int, default=200, help="synthetic invoices")
    ap.add_argument("--dpi", type=int, default=150)
    ap.add_argument("--size", default="388x300", help="training page size, height x width")
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=800, help="SentencePiece pieces")
    ap.add_argument("--recipe-workers", type=int, nargs="+", default=[0, 2],
                    help="dataloader_num_workers values for the recipe runs")
    ap.add_argument("--doctor-pages", type=int, default=24)
    ap.add_argument("--doctor-seconds", type=int, default=20, help="doctor's --max-seconds")
    ap.add_argument("--doctor-size", default="1553x1200",
                    help="page size of the recipe dataset doctor measures")
    ap.add_argument("--no-doctor", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="tiny run for tests: 16 invoices at 50 dpi, 64x48, 4 steps of 2")
    args = ap.parse_args()
    if args.quick:
        args.n, args.dpi, args.size, args.steps, args.batch, args.vocab = 16, 50, "64x48", 4, 2, 300
        args.recipe_workers = [0]
        args.doctor_pages, args.doctor_seconds, args.doctor_size = 8, 2, args.size
    size = parse_size(args.size)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_demo = time.perf_counter()
    load_start = " ".join(f"{v:.2f}" for v in os.getloadavg())

    import datasets
    import torch
    import transformers

    import docfeed

    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    # One torch thread: the tiny model's ops are too small to split, and on a 2-core machine
    # (shared, here) a second OpenMP thread only spins (a step took 7x longer with 2 under
    # load). The other core is left to the input pipeline: docfeed's threads, recipe workers.
    torch.set_num_threads(1)
    torch.manual_seed(0)
    meta = {"n": args.n, "dpi": args.dpi, "size": list(size), "steps": args.steps,
            "batch": args.batch, "torch_threads": torch.get_num_threads(),
            "machine": f"{platform.system()} {platform.release()}, {os.cpu_count()} cores",
            "load_start": load_start}
    say(f"docfeed make demo: {meta['machine']}, load average {load_start}; "
        f"docfeed {docfeed.__version__}, torch {torch.__version__}")

    # 1. Synthetic invoices.
    invoices = out / "invoices"
    header(f"docfeed synth -o {invoices} --n {args.n} --kind invoice --dpi {args.dpi}")
    _, seconds = run_cli("synth", "-o", invoices, "--n", args.n, "--seed", 0, "--kind", "invoice",
                         "--dpi", args.dpi, "--overwrite")
    say(f"  ({seconds:.1f} s)")

    # 2. Tokenizer, pack, verify.
    header("a SentencePiece tokenizer trained on the invoices' text (stands in for Donut's "
           "XLM-R one, which cannot be downloaded here)")
    tok_dir = out / "tokenizer"
    if tok_dir.exists():
        shutil.rmtree(tok_dir)
    train_sentencepiece(invoices, tok_dir, args.vocab)
    targets, new_tokens = recipe_targets(invoices)
    processor = recipe_processor(tok_dir, size, new_tokens)
    vocab = len(processor.tokenizer)
    say(f"  {tok_dir}/sentencepiece.bpe.model; with the targets' {len(new_tokens) - 2} new "
        f"special tokens: {vocab} tokens")

    packed = out / "invoices.docfeed"
    header(f"docfeed pack {invoices} -o {packed} --tokenizer {tok_dir} (original images + labels)")
    _, pack_s = run_cli("pack", invoices, "-o", packed, "--tokenizer", tok_dir,
                        "--max-length", MAX_LENGTH, "--overwrite")
    meta["pack_s"] = pack_s
    header(f"docfeed verify {packed}")
    run_cli("verify", packed)

    # 3. The recipe's dataset.
    recipe = out / f"recipe-{size[0]}x{size[1]}.hf"
    header(f"the recipe: DonutProcessor in datasets.map, float32 pixel_values at "
           f"{size[0]}x{size[1]}, save_to_disk -> {recipe}")
    from PIL import Image

    # Before the map: transformers warns once per process.
    transformers.logging.set_verbosity_warning()
    with Image.open(next((invoices / "images").iterdir())) as image:
        meta["random_padding_used"] = random_padding_reaches_processor(processor, image)
    transformers.logging.set_verbosity_error()
    # The notebook's call has random_padding=True; 5.x's processor refuses the keyword.
    takes_random_padding = int(transformers.__version__.split(".")[0]) < 5
    if not takes_random_padding:
        say(f"  note: transformers {transformers.__version__}'s DonutProcessor takes no "
            f"random_padding (it always centres), so the recipe trains on centred padding "
            f"only; docfeed redraws random padding every epoch")
    elif not meta["random_padding_used"]:
        say(f"  note: transformers {transformers.__version__}'s DonutProcessor ignores the "
            f"recipe's random_padding=True (it warns), so the recipe trains on centred padding "
            f"only; docfeed redraws random padding every epoch")
    start = time.perf_counter()
    build_recipe_dataset(invoices, recipe, processor, targets, out / "hf-cache",
                         random_padding=takes_random_padding)
    meta["recipe_prep_s"] = time.perf_counter() - start
    shutil.rmtree(out / "hf-cache", ignore_errors=True)
    say(f"  ({meta['recipe_prep_s']:.1f} s)")

    recipe_ds = datasets.load_from_disk(str(recipe))
    packed_ds = datasets.load_from_disk(str(packed))  # a docfeed dataset is a datasets dataset
    say(f"  recipe features: { {k: str(v)[:60] for k, v in recipe_ds.features.items()} }")
    say(f"  docfeed dataset, opened by datasets.load_from_disk: {packed_ds.num_rows} rows, "
        f"columns {packed_ds.column_names}")
    same = sum(a == b for a, b in zip(recipe_ds["labels"], packed_ds["labels"]))
    same_text = sum(a == b for a, b in zip(recipe_ds["target_sequence"],
                                           packed_ds["target_sequence"]))
    meta["labels_match"] = (f"docfeed's labels equal the recipe's for {same}/{len(recipe_ds)} "
                            f"samples, target_sequence for {same_text}")
    say("  " + meta["labels_match"])
    sizes = {"recipe": dir_bytes(recipe), "docfeed": dir_bytes(packed)}
    header("how compact")
    say(f"  recipe float32 save_to_disk at {size[0]}x{size[1]}: {sizes['recipe'] / 1e6:9.1f} MB")
    say(f"  docfeed (original images + labels):  {sizes['docfeed'] / 1e6:9.1f} MB "
        f"({sizes['recipe'] / sizes['docfeed']:.1f}x smaller; at 1553x1200 the recipe stores "
        f"22.4 MB a page, {22.3632e6 * args.n / sizes['docfeed']:.0f}x)")
    del recipe_ds, packed_ds

    # 4. Training, twice (or more).
    runs = []
    for workers in args.recipe_workers:
        header(f"Seq2SeqTrainer, the recipe's way: load_from_disk, default DataLoader and "
               f"collator, dataloader_num_workers={workers}: {args.steps} steps of {args.batch}")
        runs.append(train_recipe(recipe, vocab, size, args.steps, args.batch, workers,
                                 out / f"run-recipe-w{workers}"))
        say(f"  {runs[-1]['samples_per_s']:.2f} samples/s, input wait "
            f"{100 * runs[-1]['wait_fraction']:.1f} % of each step")
    header(f"docfeed.hf.Seq2SeqTrainer + DocfeedDataset({packed.name}, image_size={size}): "
           f"{args.steps} steps of {args.batch}")
    runs.append(train_docfeed(packed, vocab, size, args.steps, args.batch, out / "run-docfeed"))
    say(f"  {runs[-1]['samples_per_s']:.2f} samples/s, input wait "
        f"{100 * runs[-1]['wait_fraction']:.1f} % of each step")
    for workers in args.recipe_workers:
        shutil.rmtree(out / f"run-recipe-w{workers}", ignore_errors=True)
    shutil.rmtree(out / "run-docfeed", ignore_errors=True)

    # 5. docfeed doctor on a full-size recipe sample.
    doctor, doctor_error = None, "skipped (--no-doctor)"
    if not args.no_doctor:
        pages = min(args.doctor_pages, args.n)
        doctor_size = parse_size(args.doctor_size)
        sample = out / f"recipe-{doctor_size[0]}x{doctor_size[1]}-sample.hf"
        header(f"docfeed doctor: the recipe's dataset at {doctor_size[0]}x{doctor_size[1]} "
               f"({pages} pages, float32), estimated for the user's 16,000 invoices x 6 epochs "
               f"on an H100")
        start = time.perf_counter()
        full = recipe_processor(tok_dir, doctor_size, new_tokens)
        build_recipe_dataset(invoices, sample, full, targets, out / "hf-cache", limit=pages,
                             random_padding=int(transformers.__version__.split(".")[0]) < 5)
        shutil.rmtree(out / "hf-cache", ignore_errors=True)
        say(f"  built {sample} ({dir_bytes(sample) / 1e6:.0f} MB) in "
            f"{time.perf_counter() - start:.1f} s")
        doctor, doctor_error, seconds = run_doctor(sample, out / "doctor.json", args.doctor_seconds)
        if doctor is None:
            say(f"  docfeed doctor unavailable: {doctor_error}")
        else:
            gpu = doctor.get("gpu", {})
            say(f"  GPU step {gpu.get('step_s', float('nan')):.3f} s a batch of 8 "
                f"({gpu.get('device', '?')}); found: "
                + ", ".join(p["id"] for p in doctor.get("pathologies", [])))
            for p in doctor["pipelines"]:
                say(f"  {p['name']:34s} {p['batch_s']:8.3f} s a batch, GPU busy "
                    f"{100 * p['gpu_busy']:5.1f} %, 6 epochs of 16,000: {hours(p['job_s'])}")
            say(f"  ({seconds:.1f} s)")
        shutil.rmtree(sample, ignore_errors=True)

    meta["wall_s"] = time.perf_counter() - t_demo
    meta["load_end"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    lines = report_lines(meta, runs, sizes, doctor, doctor_error)
    (out / "report.md").write_text("\n".join(lines) + "\n")
    write_chart(out / "demo.png",
                f"make demo: {args.n} invoices at {size[0]}x{size[1]}, Seq2SeqTrainer, batch "
                f"{args.batch}, {args.steps} steps ({meta['machine']}, load {load_start})",
                runs, sizes, doctor)
    (out / "results.json").write_text(json.dumps(
        {"meta": meta, "runs": runs, "sizes": sizes, "doctor": doctor,
         "doctor_error": doctor_error}, indent=1))
    header(f"summary (also {out / 'report.md'}, {out / 'demo.png'})")
    for line in lines[2:]:
        say(line)
    bad = [r["name"] for r in runs if not all(math.isfinite(x) for x in r["losses"])]
    if bad:
        sys.exit(f"demo: non-finite losses in {bad}")


if __name__ == "__main__":
    main()

"""docfeed.hf.Trainer trains a tiny random-initialized Pix2StructForConditionalGeneration (built
from a config, nothing downloaded) on the sample documents packed with
docfeed.pack(tokenizer=...), on the CPU, with the real transformers Trainer; runs on both stacks
(transformers 4.57 in .venv/train, 5.x in .venv/hf5).

* The batches hold what the model's forward takes (flattened_patches, attention_mask, labels);
  the Trainer's processing_class (the running generation's numpy Pix2StructImageProcessor)
  gives the loader max_patches and patch_size.
* The loss falls over 30 steps.
* A run resumed from a mid-epoch checkpoint sees exactly the batches of the uninterrupted run
  from there on (nothing replayed) and reaches the same losses.
* The Trainer's batches are docfeed.Loader's, and the processor's own flattened_patches and
  attention_mask for the pages as packed (the sample documents shrunk, see small_page; bit for
  bit where torch runs its AVX2 / AVX512 kernels, as in test_hf_pix2struct_loader.py).
* With gradient accumulation the logged loss is the one computed by hand: on 5.x the mean over
  the window's label tokens (docfeed.hf rescales 5.23's Pix2Struct, whose own loss would log
  2.0x), on 4.57 Trainer's mean of the batch means.

CPU time of the file, imports of torch and transformers included: about 35 s in .venv/train,
21 s in .venv/hf5 (measured on 2 shared cores; the training itself about 8 s).
"""

import pytest

import tiny_train
from tiny_train import N_DOCS, SAVE_STEPS

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")
import docfeed  # noqa: E402
import docfeed.hf  # noqa: E402

HF_VERSION = int(transformers.__version__.split(".")[0])
MAX_PATCHES = 64  # pages of at most 64 patches of 8 x 8: tiny, the point is the plumbing
PATCH = 8
PAGE_EDGE = 256  # the packed pages' longest side (small_page)
KEYS = {"flattened_patches", "attention_mask", "labels"}
# T5's convention, which Pix2Struct keeps: pad (0) is also the decoder start token.
SPECIALS = {"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}


def pix2struct_processor(**kwargs):
    """The running generation's numpy Pix2StructImageProcessor with MAX_PATCHES of PATCH."""
    if HF_VERSION >= 5:
        from transformers.models.pix2struct.image_processing_pil_pix2struct import (
            Pix2StructImageProcessorPil as cls)
    else:
        cls = transformers.Pix2StructImageProcessor
    return cls(max_patches=MAX_PATCHES, patch_size={"height": PATCH, "width": PATCH}, **kwargs)


def tiny_pix2struct(vocab_size, seed=0):
    """google/pix2struct-base's architecture, shrunk: one vision and one text layer of width 32."""
    from transformers import Pix2StructConfig, Pix2StructForConditionalGeneration

    text = dict(vocab_size=vocab_size, hidden_size=32, d_kv=16, d_ff=64, num_layers=1,
                num_heads=2, relative_attention_num_buckets=8,
                relative_attention_max_distance=16, dropout_rate=0.0, pad_token_id=0,
                eos_token_id=1, decoder_start_token_id=0)
    vision = dict(hidden_size=32, patch_embed_hidden_size=3 * PATCH * PATCH, d_ff=64, d_kv=16,
                  num_hidden_layers=1, num_attention_heads=2, dropout_rate=0.0,
                  attention_dropout=0.0, seq_len=MAX_PATCHES + 1)  # row / column ids 1..64
    config = Pix2StructConfig(text_config=text, vision_config=vision)
    torch.manual_seed(seed)
    return Pix2StructForConditionalGeneration(config)


RecordingTrainer = tiny_train.recording(docfeed.hf.Trainer, KEYS)


def small_page(path):
    """The page shrunk to at most PAGE_EDGE pixels a side (PNG in the dataset). Pix2Struct
    standardizes and resizes each page at every load (the preset takes original pages only);
    the full-size sample documents (up to 2481 x 3508) cost about 0.27 s of CPU a page there,
    most of the test's time, and are resized to 64 patches of 8 x 8 anyway."""
    from PIL import Image

    with Image.open(path) as im:
        page = im.convert("RGB")
    page.thumbnail((PAGE_EDGE, PAGE_EDGE))
    return page


def make_trainer(ds, tok, out_dir, **dataset_options):
    from transformers import TrainingArguments

    args = tiny_train.training_args(TrainingArguments, out_dir)
    dataset = docfeed.hf.DocfeedDataset(ds, preset="pix2struct", **dataset_options)
    return RecordingTrainer(model=tiny_pix2struct(len(tok)), args=args,
                            processing_class=pix2struct_processor(), train_dataset=dataset)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    torch.set_num_threads(1)  # tiny ops: more threads only spin (and CI has 2 shared cores)
    tmp = tmp_path_factory.mktemp("pix2struct-train")
    docs = tiny_train.documents()
    tok = tiny_train.char_tokenizer([t for _, t in docs], SPECIALS)
    source = datasets.Dataset.from_dict({"image": [small_page(p) for p, _ in docs],
                                         "target_sequence": [t + "</s>" for _, t in docs]})
    source = source.cast_column("image", datasets.Image())
    ds = tmp / "ds"
    docfeed.pack(source, ds, tokenizer=tok, max_length=16)  # the preset takes original pages
    full = make_trainer(ds, tok, tmp / "full")
    full.train()
    resumed = make_trainer(ds, tok, tmp / "full")
    resumed.train(resume_from_checkpoint=str(tmp / "full" / f"checkpoint-{SAVE_STEPS}"))
    return {"full": full, "resumed": resumed, "tmp": tmp, "ds": ds, "tok": tok,
            "source": source}


def test_loss_falls(runs):
    tiny_train.check_loss_falls(runs["full"])


def test_resume_mid_epoch_continues_with_the_same_batches(runs):
    tiny_train.check_resume_continues(runs["full"], runs["resumed"],
                                      runs["tmp"] / "full" / f"checkpoint-{SAVE_STEPS}")


def test_resume_reaches_the_same_losses(runs):
    tiny_train.check_resumed_losses(runs["full"], runs["resumed"])


def test_the_trainer_batches_are_the_loaders_and_the_processors(runs):
    """The Trainer's loader takes max_patches and patch_size from processing_class: its
    batches equal docfeed.Loader's given them by hand, and the processor's output for the
    pages as packed; labels are the tokenizer's."""
    ds, tok, source = runs["ds"], runs["tok"], runs["source"]
    trainer = make_trainer(ds, tok, runs["tmp"] / "check")
    got = list(trainer.get_train_dataloader())
    assert len(got) == N_DOCS // 2
    want = docfeed.Loader(ds, batch_size=2, preset="pix2struct", max_patches=MAX_PATCHES,
                          patch_size=PATCH, seed=0, hf_version=HF_VERSION)
    for a, b in zip(got, want):
        assert set(a) == KEYS
        assert a["flattened_patches"].shape == (2, MAX_PATCHES, 2 + 3 * PATCH * PATCH)
        assert tiny_train.batch_digest(a, KEYS) == tiny_train.batch_digest(b, KEYS)
    first = got[0]
    ids = first.sample_ids.tolist()
    for row, i in zip(first["labels"].tolist(), ids):
        text = source[i]["target_sequence"]
        assert [t for t in row if t != -100] == tok(text, add_special_tokens=False)["input_ids"]
    if torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"):
        return  # torch's DEFAULT kernels round the resize otherwise (docs/pix2struct-...md)
    ref = pix2struct_processor()([source[i]["image"] for i in ids], return_tensors="pt")
    assert torch.equal(first["flattened_patches"], ref["flattened_patches"])
    assert torch.equal(first["attention_mask"], ref["attention_mask"])


def test_a_processor_docfeed_does_not_reproduce_is_refused(runs):
    dataset = docfeed.hf.DocfeedDataset(runs["ds"], preset="pix2struct")
    with pytest.raises(docfeed.InvalidArgumentError, match="is_vqa"):
        dataset.loader(processor=pix2struct_processor(is_vqa=True), batch_size=2)
    with pytest.raises(docfeed.InvalidArgumentError, match="image_size"):
        docfeed.hf.DocfeedDataset(runs["ds"], preset="pix2struct", image_size=(64, 48))


def test_gradient_accumulation_loss_is_the_no_accumulation_loss(runs):
    """One optimizer step over 2 accumulated batches of 2, against the loss computed here by
    hand on a copy of the same initial model. transformers 5.x: the loss that one batch of the
    same 4 samples has without accumulation, the mean cross-entropy over all their label tokens
    (5.23's Pix2Struct takes **kwargs, so Trainer passes num_items_in_batch and does not divide
    by the accumulation steps, but its loss is its own batch mean: without docfeed.hf's
    rescaling the logged loss is about twice this). 4.57: its Pix2Struct takes no **kwargs and
    Trainer divides each batch's mean by the steps, the mean of the two batch means, which
    docfeed.hf leaves as it is (the dates have 8 to 11 characters, so the two differ)."""
    from transformers import TrainingArguments

    ds, tok = runs["ds"], runs["tok"]
    args = TrainingArguments(
        output_dir=str(runs["tmp"] / "ga"), per_device_train_batch_size=2,
        gradient_accumulation_steps=2, max_steps=1, learning_rate=1e-2, max_grad_norm=0.0,
        lr_scheduler_type="constant", save_strategy="no", logging_steps=1, report_to=[],
        use_cpu=True, seed=0, disable_tqdm=True, dataloader_drop_last=True)
    trainer = RecordingTrainer(model=tiny_pix2struct(len(tok)), args=args,
                               processing_class=pix2struct_processor(),
                               train_dataset=docfeed.hf.DocfeedDataset(ds, preset="pix2struct"))
    trainer.train()
    assert len(trainer.seen) == 2

    model = tiny_pix2struct(len(tok))  # the same initial weights (seeded)
    model.train()
    batches = list(docfeed.Loader(ds, batch_size=2, preset="pix2struct", seed=0,
                                  max_patches=MAX_PATCHES, patch_size=PATCH,
                                  hf_version=HF_VERSION))[:2]
    assert [tiny_train.batch_digest(b, KEYS) for b in batches] == trainer.seen
    width = max(b["labels"].shape[1] for b in batches)
    labels = torch.cat([torch.nn.functional.pad(b["labels"], (0, width - b["labels"].shape[1]),
                                                value=-100) for b in batches])
    with torch.no_grad():
        whole = model(flattened_patches=torch.cat([b["flattened_patches"] for b in batches]),
                      attention_mask=torch.cat([b["attention_mask"] for b in batches]),
                      labels=labels).loss
        means = [model(**b).loss for b in batches]
    logged = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    want = whole if HF_VERSION >= 5 else sum(means) / 2
    assert logged == pytest.approx([float(want)], rel=1e-3)

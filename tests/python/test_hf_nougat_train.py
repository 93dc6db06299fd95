"""docfeed.hf.Seq2SeqTrainer trains a tiny random-initialized Nougat (VisionEncoderDecoderModel:
a DonutSwin encoder and an MBart decoder, as facebook/nougat-base, built from configs, nothing
downloaded) on the sample documents packed with docfeed.pack(preprocess="nougat",
tokenizer=...) at a tiny size, on the CPU, with the real transformers Seq2SeqTrainer; runs on
both stacks (transformers 4.57 in .venv/train, 5.x in .venv/hf5).

* The batches hold what the model takes (pixel_values, labels); the Trainer's processing_class
  (the running generation's slow NougatImageProcessor) gives the loader its settings.
* The loss falls over 30 steps.
* A run resumed from a mid-epoch checkpoint sees exactly the batches of the uninterrupted run
  from there on (nothing replayed) and reaches the same losses.
* The Trainer's batches are docfeed.Loader's, and with pad="center" the processor's own
  pixel_values for the original pages, bit for bit.

CPU time of the file, imports of torch and transformers included: about 32 s in .venv/train,
19 s in .venv/hf5 (measured on 2 shared cores; the training itself about 4 s).
"""

import numpy as np
import pytest

import tiny_train
from tiny_train import N_DOCS, SAVE_STEPS

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")
import docfeed  # noqa: E402
import docfeed.hf  # noqa: E402

HF_VERSION = int(transformers.__version__.split(".")[0])
SIZE = (64, 48)  # (height, width) of pixel_values: tiny, the point is the plumbing
KEYS = {"pixel_values", "labels"}
SPECIALS = {"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>", "bos_token": "<s>"}
D_MODEL = 64


def nougat_processor(**kwargs):
    """The running generation's slow (PIL) NougatImageProcessor at SIZE."""
    cls = transformers.NougatImageProcessorPil if HF_VERSION >= 5 else \
        transformers.NougatImageProcessor
    return cls(size={"height": SIZE[0], "width": SIZE[1]}, **kwargs)


def tiny_nougat(vocab_size, seed=0):
    """facebook/nougat-base's architecture, shrunk: a 2-stage DonutSwin of width 16 and one
    MBart decoder layer of width 64. The checkpoint scales the token embeddings by
    sqrt(d_model); unscaled, this one learns within 30 steps at this learning rate (measured on
    4.57: the mean loss of the first 5 steps 2.07 -> 0.69 over the last 5; scaled, 2.24 ->
    1.31)."""
    from transformers import (DonutSwinConfig, DonutSwinModel, MBartConfig, MBartForCausalLM,
                              VisionEncoderDecoderModel)

    torch.manual_seed(seed)
    encoder = DonutSwinModel(DonutSwinConfig(
        image_size=list(SIZE), patch_size=4, num_channels=3, embed_dim=16, depths=[1, 1],
        num_heads=[2, 2], window_size=4, mlp_ratio=2.0, drop_path_rate=0.0))
    decoder = MBartForCausalLM(MBartConfig(
        vocab_size=vocab_size, d_model=D_MODEL, decoder_layers=1, decoder_attention_heads=2,
        decoder_ffn_dim=2 * D_MODEL, encoder_layers=1, encoder_attention_heads=2,
        encoder_ffn_dim=64, max_position_embeddings=32, dropout=0.0, attention_dropout=0.0,
        is_decoder=True, add_cross_attention=True, is_encoder_decoder=False,
        scale_embedding=False, add_final_layer_norm=True, pad_token_id=0, bos_token_id=3,
        eos_token_id=1))
    model = VisionEncoderDecoderModel(encoder=encoder, decoder=decoder)
    model.config.decoder_start_token_id = 3  # <s>
    model.config.pad_token_id = 0
    return model


RecordingTrainer = tiny_train.recording(docfeed.hf.Seq2SeqTrainer, KEYS)


def make_trainer(ds, tok, out_dir, **dataset_options):
    from transformers import Seq2SeqTrainingArguments

    args = tiny_train.training_args(Seq2SeqTrainingArguments, out_dir)
    dataset = docfeed.hf.DocfeedDataset(ds, preset="nougat", **dataset_options)
    return RecordingTrainer(model=tiny_nougat(len(tok)), args=args,
                            processing_class=nougat_processor(), train_dataset=dataset)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    torch.set_num_threads(1)  # tiny ops: more threads only spin (and CI has 2 shared cores)
    tmp = tmp_path_factory.mktemp("nougat-train")
    docs = tiny_train.documents()
    tok = tiny_train.char_tokenizer([t for _, t in docs], SPECIALS)
    source = datasets.Dataset.from_dict({"image": [str(p) for p, _ in docs],
                                         "target_sequence": [t + "</s>" for _, t in docs]})
    source = source.cast_column("image", datasets.Image())
    ds = tmp / "ds"
    # The pages stored cropped and resized for SIZE: 30 steps read small pages.
    docfeed.pack(source, ds, tokenizer=tok, max_length=16, preprocess="nougat", size=SIZE,
                 hf_version=HF_VERSION)
    full = make_trainer(ds, tok, tmp / "full", image_size=SIZE)
    full.train()
    resumed = make_trainer(ds, tok, tmp / "full", image_size=SIZE)
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


def reference(proc, images):
    """The processor's pixel_values for `images` (4.x takes RGB only: convert("RGB"))."""
    if HF_VERSION >= 5:
        out = proc(images, do_convert_rgb=True)["pixel_values"]
    else:
        out = proc([im if im.mode == "RGB" else im.convert("RGB") for im in images],
                   return_tensors="np")["pixel_values"]
    return np.stack([np.asarray(x) for x in out]).astype(np.float32)


def test_the_trainer_batches_are_the_loaders_and_the_processors(runs):
    """No image_size given: the Trainer's loader takes it from processing_class. Its batches
    equal docfeed.Loader's with the same settings by hand, and (pad="center", the processor's
    padding) the processor's pixel_values for the original pages; labels are the tokenizer's."""
    ds, tok, source = runs["ds"], runs["tok"], runs["source"]
    trainer = make_trainer(ds, tok, runs["tmp"] / "check", pad="center")
    loader = trainer.get_train_dataloader()
    assert loader.loader.image_size == SIZE
    got = list(loader)
    assert len(got) == N_DOCS // 2
    want = docfeed.Loader(ds, batch_size=2, preset="nougat", image_size=SIZE, seed=0,
                          pad="center", hf_version=HF_VERSION)
    for a, b in zip(got, want):
        assert set(a) == KEYS
        assert tiny_train.batch_digest(a, KEYS) == tiny_train.batch_digest(b, KEYS)
    first = got[0]
    ids = first.sample_ids.tolist()
    pixels = reference(nougat_processor(), [source[i]["image"] for i in ids])
    assert np.array_equal(first["pixel_values"].numpy().view(np.uint32), pixels.view(np.uint32))
    for row, i in zip(first["labels"].tolist(), ids):
        text = source[i]["target_sequence"]
        assert [t for t in row if t != -100] == tok(text, add_special_tokens=False)["input_ids"]


def test_a_processor_docfeed_does_not_reproduce_is_refused(runs):
    dataset = docfeed.hf.DocfeedDataset(runs["ds"], preset="nougat")
    with pytest.raises(docfeed.InvalidArgumentError, match="do_crop_margin"):
        dataset.loader(processor=nougat_processor(do_crop_margin=False), batch_size=2)

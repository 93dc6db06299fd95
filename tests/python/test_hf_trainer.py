"""docfeed.hf.Seq2SeqTrainer: a small random-initialized Donut (DonutSwin encoder + MBart
decoder, built offline) trained by the real Seq2SeqTrainer fed by docfeed; runs on both stacks
(transformers 4.57 in .venv/train, 5.x in .venv/hf5).

* The loss falls: the model learns the handful of documents.
* A run resumed from a mid-epoch checkpoint (with gradient accumulation) sees exactly the batches
  of the uninterrupted run from there on, and reaches the same losses; no batch is replayed.
* With gradient accumulation (transformers 5.x) the logged and the backpropagated loss are what
  one batch of the same samples gives without accumulation, where the model's own loss would
  make them about N times too large (see docfeed.hf). On 4.57 this is an expected failure
  (strict xfail): its own loss is shifted and divided by an unshifted count.

Runs in .venv/train and .venv/hf5 (`make test-python`); about 20 s on 2 cores.
"""
import hashlib
import json
import pathlib

import pytest
import torch

import docfeed
import docfeed.hf

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"
SIZE = (64, 48)  # (height, width) of pixel_values: tiny, the point is the plumbing
N_DOCS = 12
D_MODEL = 64


def documents():
    """(image path, short target text) of the first N_DOCS sample documents."""
    out = []
    for line in (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()[:N_DOCS]:
        row = json.loads(line)
        fields = json.loads(row["ground_truth"])["gt_parse"]
        text = next(str(v) for v in fields.values() if isinstance(v, (str, int, float)))
        out.append((SAMPLE_DOCS / row["file_name"], text[:12]))
    return out


def char_tokenizer(texts):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    for ch in sorted(set("".join(texts))):
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")


def pack_documents(out):
    """Packs the documents with docfeed.pack (Python) at the model's size, labels from the
    tokenizer (text + </s>); returns (dataset path, tokenizer)."""
    import datasets

    docs = documents()
    tok = char_tokenizer([t for _, t in docs])
    ds = datasets.Dataset.from_dict({"image": [str(p) for p, _ in docs],
                                     "target_sequence": [t + "</s>" for _, t in docs]})
    ds = ds.cast_column("image", datasets.Image())
    docfeed.pack(ds, out, tokenizer=tok, max_length=16,
                 extra_args=["--preprocess", "donut", "--size", f"{SIZE[0]}x{SIZE[1]}"])
    return out, tok


def tiny_donut(vocab_size, seed=0):
    from transformers import (DonutSwinConfig, DonutSwinModel, MBartConfig, MBartForCausalLM,
                              VisionEncoderDecoderModel)

    torch.manual_seed(seed)
    encoder = DonutSwinModel(DonutSwinConfig(
        image_size=list(SIZE), patch_size=4, num_channels=3, embed_dim=16, depths=[1, 1],
        num_heads=[2, 2], window_size=4, mlp_ratio=2.0, drop_path_rate=0.0))
    decoder = MBartForCausalLM(MBartConfig(
        vocab_size=vocab_size, d_model=D_MODEL, decoder_layers=1, decoder_attention_heads=2,
        decoder_ffn_dim=2 * D_MODEL, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=64,
        max_position_embeddings=32, dropout=0.0, attention_dropout=0.0, is_decoder=True,
        add_cross_attention=True, is_encoder_decoder=False, scale_embedding=True,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))
    model = VisionEncoderDecoderModel(encoder=encoder, decoder=decoder)
    model.config.decoder_start_token_id = 1
    model.config.pad_token_id = 0
    return model


def batch_digest(inputs):
    h = hashlib.sha256(inputs["pixel_values"].detach().cpu().contiguous().numpy().tobytes())
    h.update(inputs["labels"].detach().cpu().numpy().tobytes())
    return h.hexdigest()


class RecordingTrainer(docfeed.hf.Seq2SeqTrainer):
    """Records every batch the training loop computes a loss on, and the loss."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen, self.losses = [], []

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        if model.training:  # evaluation calls this too
            self.seen.append(batch_digest(inputs))
            self.losses.append(float((loss[0] if return_outputs else loss).detach()))
        return loss


def make_trainer(ds, tok, out_dir, max_steps, save_steps):
    from transformers import Seq2SeqTrainingArguments

    args = Seq2SeqTrainingArguments(
        output_dir=str(out_dir), per_device_train_batch_size=2, gradient_accumulation_steps=2,
        max_steps=max_steps, learning_rate=1e-2, lr_scheduler_type="constant", warmup_steps=0,
        save_strategy="steps", save_steps=save_steps, logging_steps=1, report_to=[],
        use_cpu=True, seed=0, disable_tqdm=True, dataloader_drop_last=True)
    return RecordingTrainer(model=tiny_donut(len(tok)), args=args,
                            train_dataset=docfeed.hf.DocfeedDataset(ds, image_size=SIZE))


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    torch.set_num_threads(1)  # tiny ops: more threads only spin (and CI has 2 shared cores)
    tmp = tmp_path_factory.mktemp("hf")
    ds, tok = pack_documents(tmp / "ds")
    return ds, tok, tmp


@pytest.fixture(scope="module")
def runs(packed):
    ds, tok, tmp = packed
    full = make_trainer(ds, tok, tmp / "full", max_steps=60, save_steps=20)
    full.train()
    # Evaluation through docfeed too (storage order, centred padding, every sample).
    full.eval_metrics = full.evaluate(eval_dataset=docfeed.hf.DocfeedDataset(ds, image_size=SIZE))
    resumed = make_trainer(ds, tok, tmp / "full", max_steps=60, save_steps=20)
    resumed.train(resume_from_checkpoint=str(tmp / "full" / "checkpoint-20"))
    return {"full": full, "resumed": resumed, "tmp": tmp}


def test_loss_falls(runs):
    losses = runs["full"].losses
    assert len(losses) == 120  # 60 optimizer steps x 2 accumulated batches
    first, last = sum(losses[:12]) / 12, sum(losses[-12:]) / 12  # first and last 2 epochs
    assert last < 0.5 * first, (first, last)
    # The trained model's loss on the documents, evaluated through docfeed: low as well.
    assert runs["full"].eval_metrics["eval_loss"] < 0.5 * first


def test_resume_mid_epoch_continues_with_the_same_batches(runs):
    full, resumed = runs["full"], runs["resumed"]
    # 12 docs / batch 2 = 6 batches an epoch = 3 optimizer steps: checkpoint-20 is two steps
    # (4 batches, 8 samples) into epoch 6.
    state = json.loads((runs["tmp"] / "full" / "checkpoint-20" /
                        docfeed.hf.STATE_FILE).read_text())["loader"]
    assert (state["epoch"], state["position"]) == (6, 8)
    assert len(resumed.seen) == 80  # steps 21..60 only: nothing replayed
    assert resumed.seen == full.seen[40:]
    assert resumed.losses == pytest.approx(full.losses[40:], rel=1e-4, abs=1e-5)
    # Epochs: each epoch of the uninterrupted run is 6 different batches.
    for e in range(20):
        assert len(set(full.seen[6 * e:6 * e + 6])) == 6


def test_install_into_an_existing_trainer(runs):
    """docfeed.hf.install() turns a plain transformers trainer into a docfeed-fed one."""
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

    ds = runs["tmp"] / "ds"
    args = Seq2SeqTrainingArguments(output_dir=str(runs["tmp"] / "installed"), report_to=[],
                                    per_device_train_batch_size=4, use_cpu=True, seed=3)
    trainer = Seq2SeqTrainer(model=tiny_donut(32), args=args,
                             train_dataset=docfeed.hf.DocfeedDataset(ds, image_size=SIZE))
    docfeed.hf.install(trainer)
    assert isinstance(trainer, docfeed.hf.DocfeedTrainerMixin)
    loader = trainer.get_train_dataloader()
    assert len(loader) == 3  # 12 samples / 4 (dataloader_drop_last=False: no remainder here)
    want = docfeed.Loader(ds, batch_size=4, image_size=SIZE, seed=3)
    for got, ref in zip(loader, want):
        assert torch.equal(got.sample_ids, ref.sample_ids)
        assert torch.equal(got["pixel_values"], ref["pixel_values"])
        assert torch.equal(got["labels"], ref["labels"])


def grad_probe(model):
    """A TrainerCallback keeping the gradients of the first optimizer step (before it)."""
    from transformers import TrainerCallback

    class GradProbe(TrainerCallback):
        grads = None

        def on_pre_optimizer_step(self, args, state, control, **kwargs):
            if self.grads is None:
                self.grads = {n: p.grad.detach().clone()
                              for n, p in model.named_parameters() if p.grad is not None}

    return GradProbe()


def transformers_major():
    import transformers

    return int(transformers.__version__.split(".")[0])


@pytest.mark.xfail(
    transformers_major() < 5, strict=True,
    reason="transformers 4.57's VisionEncoderDecoderModel loss is ForCausalLMLoss (labels "
           "shifted once more) divided by Trainer's unshifted token count, so its accumulated "
           "loss is not its own no-accumulation loss; docfeed.hf leaves 4.x's loss as it is")
def test_gradient_accumulation_loss_is_the_no_accumulation_loss(packed):
    """One optimizer step over 2 accumulated batches of 2 logs the loss, and has (before the
    optimizer step) the gradient, that one batch of the same 4 samples has without accumulation,
    computed here by hand on a copy of the same initial model: the mean cross-entropy over all
    their label tokens. transformers 5.23 without docfeed.hf's rescaling logs and backpropagates
    about twice that (each batch's own mean, summed)."""
    from transformers import Seq2SeqTrainingArguments

    ds, tok, tmp = packed
    vocab = len(tok)
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp / "ga"), per_device_train_batch_size=2,
        gradient_accumulation_steps=2, max_steps=1, learning_rate=1e-2, max_grad_norm=0.0,
        lr_scheduler_type="constant", save_strategy="no", logging_steps=1, report_to=[],
        use_cpu=True, seed=0, disable_tqdm=True, dataloader_drop_last=True)
    trainer = RecordingTrainer(model=tiny_donut(vocab), args=args,
                               train_dataset=docfeed.hf.DocfeedDataset(ds, image_size=SIZE))
    probe = grad_probe(trainer.model)
    trainer.add_callback(probe)
    trainer.train()
    assert len(trainer.seen) == 2 and probe.grads

    model = tiny_donut(vocab)  # the same initial weights (seeded)
    model.train()
    batches = list(docfeed.Loader(ds, batch_size=2, image_size=SIZE, seed=0))[:2]
    assert [batch_digest(b) for b in batches] == trainer.seen  # the same two batches
    width = max(b["labels"].shape[1] for b in batches)
    labels = torch.cat([torch.nn.functional.pad(b["labels"], (0, width - b["labels"].shape[1]),
                                                value=-100) for b in batches])
    whole = model(pixel_values=torch.cat([b["pixel_values"] for b in batches]), labels=labels)
    whole.loss.backward()
    logged = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert logged == pytest.approx([float(whole.loss.detach())], rel=1e-3)
    for name, p in model.named_parameters():
        if p.grad is not None:
            torch.testing.assert_close(probe.grads[name], p.grad, rtol=1e-4, atol=1e-6,
                                       msg=lambda m: f"{name}: {m}")

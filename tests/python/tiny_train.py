"""What the tiny-model training tests share (test_hf_nougat_train.py,
test_hf_pix2struct_train.py, test_hf_qwen_vl_train.py, test_hf_idefics3_train.py): a
character-level tokenizer made offline, the sample documents with a short text target each, and
a Trainer that records the batches and losses of training.

Each trains STEPS steps and checks the same things: the loss falls; a run resumed from the
checkpoint SAVE_STEPS steps in (mid-epoch) sees exactly the batches of the uninterrupted run from
there on (nothing replayed, nothing skipped) and reaches the same losses.
"""
import hashlib

import qwen_tiny

N_DOCS = 8  # batch 2: 4 batches an epoch
STEPS = 30
SAVE_STEPS = 10  # 2 batches into epoch 2
LEARNING_RATE = 1e-2


def documents(count=N_DOCS):
    """(image path, date of the receipt) of the first `count` sample documents: the dates'
    shape ("dd/mm/yyyy") is learned within 30 steps, each page's digits only in part."""
    return qwen_tiny.documents(count, field="date")


def char_tokenizer(texts, specials):
    """A character-level PreTrainedTokenizerFast covering `texts`: ids 0.. are `specials`
    (pad_token, eos_token, unk_token, then bos_token when given: a dict of those names), then
    the characters."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {}
    for token in specials.values():
        vocab[token] = len(vocab)
    for ch in sorted(set("".join(texts))):
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab, unk_token=specials["unk_token"]))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    return PreTrainedTokenizerFast(tokenizer_object=core, **specials)


def batch_digest(inputs, keys):
    h = hashlib.sha256()
    for key in sorted(keys):
        h.update(inputs[key].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def recording(trainer_class, keys):
    """`trainer_class` (a docfeed.hf trainer) recording every batch the training loop computes
    a loss on (its digest), and the loss; every batch must hold exactly `keys`."""

    class RecordingTrainer(trainer_class):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.seen, self.losses = [], []

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            assert set(inputs) == keys, set(inputs)
            loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            if model.training:  # evaluation calls this too
                self.seen.append(batch_digest(inputs, keys))
                self.losses.append(float((loss[0] if return_outputs else loss).detach()))
            return loss

    return RecordingTrainer


def training_args(args_class, out_dir):
    """Batch 2, constant learning rate, a checkpoint every SAVE_STEPS steps, on the CPU."""
    return args_class(
        output_dir=str(out_dir), per_device_train_batch_size=2, max_steps=STEPS,
        learning_rate=LEARNING_RATE, lr_scheduler_type="constant", warmup_steps=0,
        save_strategy="steps", save_steps=SAVE_STEPS, logging_steps=1, report_to=[],
        use_cpu=True, seed=0, disable_tqdm=True, dataloader_drop_last=True)


def mean(values):
    return sum(values) / len(values)


def check_loss_falls(full):
    """The uninterrupted run trained STEPS steps and the mean loss of its last five is under
    0.6 of its first five's."""
    assert len(full.losses) == STEPS
    first, last = mean(full.losses[:5]), mean(full.losses[-5:])
    assert last < 0.6 * first, (first, last)


def check_resume_continues(full, resumed, checkpoint):
    """The checkpoint SAVE_STEPS in holds the loader 2 batches into epoch 2 (N_DOCS docs /
    batch 2 = 4 batches an epoch); the resumed run saw exactly the uninterrupted run's batches
    from there (nothing replayed), and each epoch was 4 different batches."""
    import json

    import docfeed.hf

    state = json.loads((checkpoint / docfeed.hf.STATE_FILE).read_text())["loader"]
    assert (state["epoch"], state["position"]) == (2, 4)
    assert len(resumed.seen) == STEPS - SAVE_STEPS  # nothing replayed
    assert resumed.seen == full.seen[SAVE_STEPS:]
    for e in range(STEPS // 4):
        assert len(set(full.seen[4 * e:4 * e + 4])) == 4


def check_resumed_losses(full, resumed):
    """The resumed run's losses are the uninterrupted run's from the checkpoint on."""
    import pytest

    assert resumed.losses == pytest.approx(full.losses[SAVE_STEPS:], rel=1e-4, abs=1e-5)

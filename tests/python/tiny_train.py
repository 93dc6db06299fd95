"""What the tiny-model training tests share (test_hf_qwen_vl_train.py,
test_hf_idefics3_train.py): a docfeed.hf.Trainer that records every batch it trains on and its
loss, and the TrainingArguments of a short CPU run with a mid-run checkpoint.

Each test trains STEPS steps (batch 2, constant learning rate), checkpointing every SAVE_STEPS,
then resumes a second trainer from checkpoint-SAVE_STEPS and compares.
"""
import hashlib

import docfeed.hf

STEPS = 30
SAVE_STEPS = 10


def batch_digest(inputs, keys):
    """A hash of the batch's tensors under `keys`: equal batches, equal digests."""
    h = hashlib.sha256()
    for key in sorted(keys):
        h.update(inputs[key].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


class RecordingTrainer(docfeed.hf.Trainer):
    """Records every batch the training loop computes a loss on, and the loss; asserts that
    the batch holds exactly `keys` (what the model takes)."""

    keys: frozenset = frozenset()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen, self.losses = [], []

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        assert set(inputs) == self.keys, set(inputs)
        loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        if model.training:
            self.seen.append(batch_digest(inputs, self.keys))
            self.losses.append(float((loss[0] if return_outputs else loss).detach()))
        return loss


def training_args(out_dir, learning_rate):
    from transformers import TrainingArguments

    return TrainingArguments(
        output_dir=str(out_dir), per_device_train_batch_size=2, max_steps=STEPS,
        learning_rate=learning_rate, lr_scheduler_type="constant", warmup_steps=0,
        save_strategy="steps", save_steps=SAVE_STEPS, logging_steps=1, report_to=[],
        use_cpu=True, seed=0, disable_tqdm=True, dataloader_drop_last=True)

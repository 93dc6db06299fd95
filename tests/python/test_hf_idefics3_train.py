"""docfeed.hf.Trainer trains a tiny random-initialized Idefics3ForConditionalGeneration (the
SmolVLM / SmolDocling architecture) on the sample documents packed with
docfeed.pack(processor=...) (chat-template token columns), on the CPU, with the real
transformers Trainer; runs on both stacks (transformers 4.57 in .venv/train, 5.x in .venv/hf5).
Nothing is downloaded: the processor and the model are idefics3_tiny.py's.

* The batches hold what the model takes (pixel_values, pixel_attention_mask, input_ids,
  attention_mask, labels), and the Trainer's processing_class gives the loader its settings.
* The loss falls over 30 steps.
* A run resumed from a mid-epoch checkpoint sees exactly the batches of the uninterrupted run
  from there on (nothing replayed) and reaches the same losses.
"""

import pytest

import idefics3_tiny

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")
import docfeed  # noqa: E402
import docfeed.hf  # noqa: E402
import tiny_train  # noqa: E402
from tiny_train import SAVE_STEPS  # noqa: E402

N_DOCS = 8
KEYS = frozenset({"pixel_values", "pixel_attention_mask", "input_ids", "attention_mask",
                  "labels"})


RecordingTrainer = tiny_train.recording(docfeed.hf.Trainer, KEYS)


def make_trainer(ds, proc, out_dir):
    from transformers import TrainingArguments

    return RecordingTrainer(model=idefics3_tiny.model(proc.tokenizer),
                            args=tiny_train.training_args(TrainingArguments, out_dir),
                            processing_class=proc,
                            train_dataset=docfeed.hf.DocfeedDataset(ds, preset="idefics3"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    torch.set_num_threads(1)  # tiny ops: more threads only spin (and CI has 2 shared cores)
    tmp = tmp_path_factory.mktemp("idefics3-train")
    docs = idefics3_tiny.documents(N_DOCS, field="date")
    source = datasets.Dataset.from_dict({"image": [str(p) for p, _ in docs],
                                         "text": [t for _, t in docs]})
    source = source.cast_column("image", datasets.Image())
    proc = idefics3_tiny.processor([t for _, t in docs])
    ds = tmp / "ds"
    docfeed.pack(source, ds, processor=proc, prompt=idefics3_tiny.PROMPT, text_column="text")
    full = make_trainer(ds, proc, tmp / "full")
    full.train()
    resumed = make_trainer(ds, proc, tmp / "full")
    resumed.train(resume_from_checkpoint=str(tmp / "full" / f"checkpoint-{SAVE_STEPS}"))
    return {"full": full, "resumed": resumed, "tmp": tmp, "ds": ds, "proc": proc}


def test_loss_falls(runs):
    tiny_train.check_loss_falls(runs["full"])


def test_resume_mid_epoch_continues_with_the_same_batches(runs):
    tiny_train.check_resume_continues(runs["full"], runs["resumed"],
                                      runs["tmp"] / "full" / f"checkpoint-{SAVE_STEPS}")


def test_resume_reaches_the_same_losses(runs):
    tiny_train.check_resumed_losses(runs["full"], runs["resumed"])


def test_the_trainer_batches_are_the_loaders(runs):
    """The Trainer's loader takes its settings from processing_class: its batches equal a
    docfeed.Loader given the processor's longest_edge / max_image_size by hand."""
    trainer = make_trainer(runs["ds"], runs["proc"], runs["tmp"] / "check")
    loader = trainer.get_train_dataloader()
    want = docfeed.Loader(runs["ds"], batch_size=2, preset="idefics3", seed=0,
                          longest_edge=idefics3_tiny.LONGEST_EDGE,
                          max_image_size=idefics3_tiny.TILE,
                          hf_version=idefics3_tiny.transformers_major())
    got = list(loader)
    assert len(got) == N_DOCS // 2
    for a, b in zip(got, want):
        assert set(a) == KEYS
        assert tiny_train.batch_digest(a, KEYS) == tiny_train.batch_digest(b, KEYS)

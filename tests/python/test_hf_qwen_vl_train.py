"""docfeed.hf.Trainer trains a tiny random-initialized Qwen2_5_VLForConditionalGeneration on the
sample documents packed with docfeed.pack(processor=...) (chat-template token columns), on the
CPU, with the real transformers Trainer; runs on both stacks (transformers 4.57 in .venv/train,
5.x in .venv/hf5). Nothing is downloaded: the processor is qwen_tiny.py's.

* The batches hold what the model takes (pixel_values, image_grid_thw, input_ids,
  attention_mask, labels), and the Trainer's processing_class gives the loader its settings.
* The loss falls over 30 steps.
* A run resumed from a mid-epoch checkpoint sees exactly the batches of the uninterrupted run
  from there on (nothing replayed) and reaches the same losses. transformers' own resume (4.57
  and 5.23 alike) does not restore Qwen2.5-VL's weights: it saves them in the legacy key layout
  (_checkpoint_conversion_mapping) and loads them back with load_state_dict(strict=False),
  logging "There were missing keys"; the trainer here loads them with from_pretrained, which
  maps the keys (RecordingTrainer._load_from_checkpoint), so that the losses can be compared.

About 15 s on 2 cores.
"""

import pytest

import qwen_tiny

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")
import docfeed  # noqa: E402
import docfeed.hf  # noqa: E402
import tiny_train  # noqa: E402
from tiny_train import SAVE_STEPS  # noqa: E402

N_DOCS = 8
KEYS = frozenset({"pixel_values", "image_grid_thw", "input_ids", "attention_mask", "labels"})


def tiny_qwen(tok, seed=0):
    """A random-initialized Qwen2.5-VL: one vision block of width 32, one text layer of 64."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    vocab = len(tok)
    text = dict(vocab_size=vocab + 1, hidden_size=64, intermediate_size=128,
                num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                max_position_embeddings=1024, bos_token_id=None, pad_token_id=tok.pad_token_id,
                eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"))
    rope = {"type": "mrope", "rope_type": "default", "mrope_section": [4, 6, 6]}  # head_dim 32
    if qwen_tiny.transformers_major() >= 5:
        text["rope_parameters"] = dict(rope, rope_theta=10000.0)
    else:
        text["rope_scaling"] = rope
    config = Qwen2_5_VLConfig(
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                           out_hidden_size=64, fullatt_block_indexes=[0], window_size=56),
        text_config=text,
        image_token_id=tok.convert_tokens_to_ids("<|image_pad|>"),
        video_token_id=vocab,  # no video token in this vocabulary: an id that never occurs
        vision_start_token_id=tok.convert_tokens_to_ids("<|vision_start|>"),
        vision_end_token_id=tok.convert_tokens_to_ids("<|vision_end|>"))
    torch.manual_seed(seed)
    return Qwen2_5_VLForConditionalGeneration(config)


class RecordingTrainer(tiny_train.recording(docfeed.hf.Trainer, KEYS)):
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        """The checkpoint's weights through from_pretrained (see the module docstring)."""
        model = self.model if model is None else model
        saved = type(model).from_pretrained(resume_from_checkpoint)
        model.load_state_dict(saved.state_dict())


def make_trainer(ds, proc, out_dir):
    from transformers import TrainingArguments

    return RecordingTrainer(model=tiny_qwen(proc.tokenizer),
                            args=tiny_train.training_args(TrainingArguments, out_dir),
                            processing_class=proc,
                            train_dataset=docfeed.hf.DocfeedDataset(ds, preset="qwen2.5-vl"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    torch.set_num_threads(1)  # tiny ops: more threads only spin (and CI has 2 shared cores)
    tmp = tmp_path_factory.mktemp("qwen-train")
    docs = qwen_tiny.documents(N_DOCS, field="date")
    source = datasets.Dataset.from_dict({"image": [str(p) for p, _ in docs],
                                         "text": [t for _, t in docs]})
    source = source.cast_column("image", datasets.Image())
    proc = qwen_tiny.processor([t for _, t in docs])
    ds = tmp / "ds"
    docfeed.pack(source, ds, processor=proc, prompt=qwen_tiny.PROMPT, text_column="text",
                 preprocess="qwen2.5-vl")
    full = make_trainer(ds, proc, tmp / "full")
    full.train()
    resumed = make_trainer(ds, proc, tmp / "full")
    resumed.train(resume_from_checkpoint=str(tmp / "full" / f"checkpoint-{SAVE_STEPS}"))
    return {"full": full, "resumed": resumed, "tmp": tmp, "ds": ds, "proc": proc}


def test_loss_falls(runs):
    # The receipts' dates: their shape ("dd/mm/20yy") is learned within 30 steps, each page's
    # digits only in part; measured: about 3.0 -> 1.5 in both stacks.
    tiny_train.check_loss_falls(runs["full"])


def test_resume_mid_epoch_continues_with_the_same_batches(runs):
    tiny_train.check_resume_continues(runs["full"], runs["resumed"],
                                      runs["tmp"] / "full" / f"checkpoint-{SAVE_STEPS}")


def test_resume_reaches_the_same_losses(runs):
    tiny_train.check_resumed_losses(runs["full"], runs["resumed"])


def test_the_trainer_batches_are_the_loaders(runs):
    """The Trainer's loader takes its settings from processing_class: its batches equal a
    docfeed.Loader given the processor's min_pixels / max_pixels by hand."""
    trainer = make_trainer(runs["ds"], runs["proc"], runs["tmp"] / "check")
    loader = trainer.get_train_dataloader()
    want = docfeed.Loader(runs["ds"], batch_size=2, preset="qwen2.5-vl", seed=0,
                          min_pixels=qwen_tiny.MIN_PIXELS, max_pixels=qwen_tiny.MAX_PIXELS,
                          hf_version=qwen_tiny.transformers_major())
    got = list(loader)
    assert len(got) == N_DOCS // 2
    for a, b in zip(got, want):
        assert set(a) == KEYS
        assert tiny_train.batch_digest(a, KEYS) == tiny_train.batch_digest(b, KEYS)

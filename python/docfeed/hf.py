"""Hugging Face Trainer integration: docfeed's loader feeds `Trainer` / `Seq2SeqTrainer`.

The recipe change is one import and one dataset argument:

    from docfeed.hf import DocfeedDataset, Seq2SeqTrainer   # instead of transformers'
    trainer = Seq2SeqTrainer(model=model, args=args,
                             train_dataset=DocfeedDataset("train.docfeed", image_size=(1280, 960)))
    trainer.train(resume_from_checkpoint=True)

What it does (DocfeedTrainerMixin, usable with any Trainer subclass):
  * get_train_dataloader() returns a docfeed.Loader with per_device_train_batch_size, seed
    (args.data_seed or args.seed), drop_last (args.dataloader_drop_last), rank / world size from
    torch.distributed (so it works under torchrun), the training device (CUDA: pinned buffers,
    copies and normalization on the GPU) and room for gradient accumulation (the Trainer fetches
    gradient_accumulation_steps batches before using them, so max_held is raised to fit).
  * Every checkpoint gets docfeed_loader_state.json: the loader's state after the last batch the
    training loop consumed (global positions, valid for every rank).
  * train(resume_from_checkpoint=...) restores that state and continues mid-epoch with exactly the
    batches an uninterrupted run would have seen. It does not replay the skipped batches the way
    Trainer's own resume does (args.ignore_data_skip is set for the call, then restored); the
    epoch's remaining batches are what len() reports for that epoch.
  * get_eval_dataloader() uses docfeed for a DocfeedDataset eval set: storage order, centred
    padding, every sample (a short last batch; under several processes the last step wraps).
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Tuple

import transformers
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, get_last_checkpoint

import docfeed
from docfeed import _docfeed

STATE_FILE = "docfeed_loader_state.json"


class DocfeedDataset:
    """A docfeed dataset and the docfeed.Loader options a Trainer should use with it. batch
    size, seed, drop_last, rank/world size and device come from the Trainer unless given here."""

    def __init__(self, path: "str | os.PathLike[str]", image_size: Tuple[int, int],
                 **loader_options: Any) -> None:
        self.path = os.fspath(path)
        self.image_size = tuple(image_size)
        self.loader_options = loader_options
        self._num_samples: Optional[int] = None

    def __len__(self) -> int:
        """Samples in the dataset, from its manifest and index (no loader, no image read)."""
        if self._num_samples is None:
            self._num_samples = int(_docfeed.dataset_info(self.path)["num_samples"])
        return self._num_samples

    def loader(self, **defaults: Any) -> docfeed.Loader:
        options = dict(defaults)
        options.update(self.loader_options)
        return docfeed.Loader(self.path, image_size=self.image_size, **options)


class _TrainLoader:
    """The object Trainer iterates: a docfeed.Loader that applies a checkpoint's state when the
    Trainer starts the checkpoint's epoch (set_epoch), and otherwise starts epochs from 0."""

    def __init__(self, loader: docfeed.Loader, pending: Optional[Dict[str, int]]) -> None:
        self.loader = loader
        self.pending = pending

    def set_epoch(self, epoch: int) -> None:
        pending, self.pending = self.pending, None
        if pending is not None and int(pending["epoch"]) == int(epoch):
            self.loader.load_state_dict(pending)
        else:
            self.loader.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        return iter(self.loader)

    def state_dict(self) -> Dict[str, int]:
        return self.loader.state_dict()


class DocfeedTrainerMixin:
    """Mix into a transformers Trainer subclass (see the module docstring)."""

    _docfeed_train: Optional[_TrainLoader] = None
    _docfeed_pending: Optional[Dict[str, int]] = None

    def _docfeed_device(self):
        device = self.args.device
        return device if getattr(device, "type", "cpu") == "cuda" else None

    def get_train_dataloader(self):
        if not isinstance(self.train_dataset, DocfeedDataset):
            return super().get_train_dataloader()
        args = self.args
        seed = args.data_seed if args.data_seed is not None else args.seed
        loader = self.train_dataset.loader(
            batch_size=self._train_batch_size, seed=seed, drop_last=args.dataloader_drop_last,
            device=self._docfeed_device(), max_held=args.gradient_accumulation_steps + 2)
        self._docfeed_train = _TrainLoader(loader, self._docfeed_pending)
        self._docfeed_pending = None
        return self._docfeed_train

    def get_eval_dataloader(self, eval_dataset=None):
        dataset = eval_dataset if eval_dataset is not None else self.eval_dataset
        if isinstance(dataset, str):
            dataset = self.eval_dataset[dataset]
        if not isinstance(dataset, DocfeedDataset):
            return super().get_eval_dataloader(eval_dataset)
        defaults = dict(batch_size=self.args.eval_batch_size, shuffle=False, pad="center",
                        drop_last=False, device=self._docfeed_device())
        return _TrainLoader(dataset.loader(**defaults), None)

    def train(self, resume_from_checkpoint=None, *args: Any, **kwargs: Any):
        if isinstance(resume_from_checkpoint, bool) and resume_from_checkpoint:
            resume_from_checkpoint = get_last_checkpoint(self.args.output_dir)
            if resume_from_checkpoint is None:
                raise ValueError(f"No valid checkpoint found in {self.args.output_dir}")
        self._docfeed_pending = None
        restore_skip = self.args.ignore_data_skip
        if resume_from_checkpoint is not None and isinstance(self.train_dataset, DocfeedDataset):
            path = os.path.join(resume_from_checkpoint, STATE_FILE)
            if os.path.exists(path):
                with open(path) as f:
                    self._docfeed_pending = json.load(f)["loader"]
                # The loader resumes itself; Trainer must not skip (replay) batches.
                self.args.ignore_data_skip = True
        try:
            return super().train(resume_from_checkpoint, *args, **kwargs)
        finally:
            self.args.ignore_data_skip = restore_skip

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        if self._docfeed_train is None or not self.args.should_save:
            return
        folder = os.path.join(self._get_output_dir(trial=trial),
                              f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
        if not os.path.isdir(folder):
            return
        state = {"loader": self._docfeed_train.state_dict(), "global_step": self.state.global_step,
                 "docfeed_version": docfeed.__version__}
        tmp = os.path.join(folder, STATE_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, os.path.join(folder, STATE_FILE))


class Trainer(DocfeedTrainerMixin, transformers.Trainer):
    """transformers.Trainer fed by docfeed (see the module docstring)."""


class Seq2SeqTrainer(DocfeedTrainerMixin, transformers.Seq2SeqTrainer):
    """transformers.Seq2SeqTrainer fed by docfeed (see the module docstring)."""


def install(trainer: Any) -> Any:
    """Makes an existing Trainer instance use docfeed (its class gains DocfeedTrainerMixin)."""
    if not isinstance(trainer, DocfeedTrainerMixin):
        trainer.__class__ = type(f"Docfeed{type(trainer).__name__}",
                                 (DocfeedTrainerMixin, type(trainer)), {})
    return trainer

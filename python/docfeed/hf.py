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
  * Elastic resume: the checkpoint may come from a run of another world size (torchrun with
    other --nnodes / --nproc_per_node). The rest of the saved epoch is re-divided among the new
    ranks, each sample of it served once (docfeed.Loader.load_state_dict), every rank getting the
    same number of batches. DocfeedDataset(..., elastic="global_batch") keeps the global batch:
    the per-device batch becomes the checkpoint's world_size x batch_size over this run's world
    size (an InvalidArgumentError when it does not divide), so the Trainer's steps, epochs and
    schedule mean what they meant. Otherwise (elastic=None or "rank_batch") the per-device batch
    is the Trainer's (transformers 4.x restores the checkpoint's on resume, whatever
    per_device_train_batch_size says; 5.x keeps per_device_train_batch_size), and keeping the
    per-rank batch under another world size makes a step a different number of samples, so the
    Trainer's count of epochs, derived from global_step, no longer matches the data; docfeed
    follows its own (the saved epoch, then the next ones) and logs the shift. elastic=None
    accepts whichever mode holds; a per-device batch that keeps neither raises
    docfeed.InvalidArgumentError (a ValueError) naming world_size and batch_size. A saved
    state whose epoch has no batch left for the new shape (it was over, or only a tail smaller
    than the new step remains, dropped as any epoch's) continues with the next epoch.
  * get_eval_dataloader() uses docfeed for a DocfeedDataset eval set: storage order, centred
    padding, every sample (a short last batch; under several processes the last step wraps).
  * The pixels are those of the DonutImageProcessor the run would use (processor_generation):
    the Trainer's processing_class when it is a Donut processor (DonutImageProcessor of 4.x;
    DonutImageProcessorPil or the torchvision DonutImageProcessor of 5.x), else what the
    installed transformers' AutoImageProcessor returns (4.x: the PIL processor; 5.x: the
    torchvision backend when torchvision is installed, else the PIL one). A dataset whose pages
    were stored resized (`pack --preprocess`, or migrated from saved tensors) keeps the
    generation it records, with a warning when that is not the one the run would use.
    DocfeedDataset(..., hf_version=, backend=) overrides all of it; the choice and its reason
    are logged (logger "docfeed.hf", INFO) and kept in DocfeedDataset.generation.
  * Gradient accumulation: the loss of a VisionEncoderDecoderModel (Donut) is the mean over the
    accumulation window's label tokens on every transformers version, as 4.57 computes it (5.x's
    model ignores num_items_in_batch; see _loss_ignores_num_items and compute_loss).

Works with transformers 4.40 through 5.x (tested: 4.57.6 with datasets 4.8.5 and 5.23.0 with
datasets 5.2.0).
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import logging
import os
from typing import Any, Dict, Optional, Tuple

import transformers
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, get_last_checkpoint

import docfeed
from docfeed import _docfeed

STATE_FILE = "docfeed_loader_state.json"

logger = logging.getLogger(__name__)


def _transformers_major() -> int:
    return int(transformers.__version__.split(".")[0])


def _torchvision_installed() -> bool:
    return importlib.util.find_spec("torchvision") is not None


def processor_generation(processor: Any = None) -> Tuple[int, str, str]:
    """(hf_version, backend, reason): the DonutImageProcessor whose pixels docfeed should give.

    `processor`: a Donut image processor or a processor holding one (DonutProcessor's
    image_processor), e.g. the Trainer's processing_class; None or anything else: what the
    installed transformers' AutoImageProcessor would build. transformers 4's
    DonutImageProcessorFast is refused (docfeed does not reproduce it)."""
    version = transformers.__version__
    image_processor = getattr(processor, "image_processor", processor)
    name = type(image_processor).__name__ if image_processor is not None else ""
    if name.startswith("DonutImageProcessor"):
        if _transformers_major() >= 5:
            backend = getattr(image_processor, "backend", None)
            if backend not in ("pil", "torchvision"):
                backend = "pil" if name.endswith("Pil") else "torchvision"
            return 5, backend, f"the processor is {name} (transformers {version}, {backend} backend)"
        if name != "DonutImageProcessor":
            raise docfeed.InvalidArgumentError(
                f"processor: transformers {version}'s {name} is not reproduced by docfeed; use "
                "DonutImageProcessor (use_fast=False) or pass hf_version= and backend=")
        return 4, "pil", f"the processor is {name} (transformers {version})"
    if _transformers_major() >= 5:
        backend = "torchvision" if _torchvision_installed() else "pil"
        return 5, backend, (f"transformers {version} is installed; its AutoImageProcessor gives the "
                            f"{backend} backend" + ("" if backend == "torchvision" else
                                                    " (torchvision is not installed)"))
    return 4, "pil", f"transformers {version} is installed"


_QWEN_PRESETS = ("qwen2-vl", "qwen2.5-vl")
_QWEN_SETTINGS = ("min_pixels", "max_pixels", "patch_size", "merge_size", "temporal_patch_size")


def qwen_generation(processor: Any = None) -> Tuple[int, str, str]:
    """(hf_version, backend, reason): the Qwen2VLImageProcessor docfeed's Qwen presets should
    reproduce: the processor's (4.x Qwen2VLImageProcessor: 4, pil; 5.x Qwen2VLImageProcessorPil:
    5, pil; 5.x Qwen2VLImageProcessor: 5, torchvision), else what the installed transformers'
    AutoImageProcessor gives (4.x: pil; 5.x: torchvision when installed, else pil). 4.x's
    Qwen2VLImageProcessorFast is not reproduced: a warning names it and 4 / pil is used."""
    from docfeed import chat_labels

    version = transformers.__version__
    image_processor = getattr(processor, "image_processor", processor)
    name = type(image_processor).__name__ if image_processor is not None else ""
    if name.startswith("Qwen2VLImageProcessor") or name.startswith("Qwen2_5_VLImageProcessor"):
        if _transformers_major() < 5 and name != "Qwen2VLImageProcessor":
            logger.warning("docfeed: the processor's %s (transformers %s) is not reproduced; "
                           "docfeed gives Qwen2VLImageProcessor's pixels", name, version)
        hf_version, backend = chat_labels.processor_generation(image_processor)
        return hf_version, backend, f"the processor is {name} (transformers {version})"
    if _transformers_major() >= 5:
        backend = "torchvision" if _torchvision_installed() else "pil"
        return 5, backend, f"transformers {version} is installed ({backend} backend)"
    return 4, "pil", f"transformers {version} is installed"


class DocfeedDataset:
    """A docfeed dataset and the docfeed.Loader options a Trainer should use with it. batch
    size, seed, drop_last, rank/world size and device come from the Trainer unless given here.

    image_size: the Donut / Nougat pixel_values size (required for them). preset="qwen2-vl" or
    "qwen2.5-vl" (a dataset packed with docfeed.pack(processor=...)): batches hold
    pixel_values, image_grid_thw, input_ids, attention_mask and labels, the keyword arguments a
    Qwen2VLForConditionalGeneration / Qwen2_5_VLForConditionalGeneration takes; min_pixels,
    max_pixels, patch_size, merge_size and temporal_patch_size default to the Trainer's
    processing_class' image processor (else the preset's defaults), hf_version and backend to
    its generation (qwen_generation); the batches stay on the CPU (the Trainer moves them).
    preset="idefics3" (Idefics3 / SmolVLM / SmolDocling; a dataset packed with
    docfeed.pack(processor=...) of an Idefics3Processor or SmolVLMProcessor): batches hold
    pixel_values, pixel_attention_mask, input_ids, attention_mask and labels, what an
    Idefics3ForConditionalGeneration takes; longest_edge, max_image_size and
    do_image_splitting default to the Trainer's processing_class' image processor, hf_version
    to the installed transformers (the PIL processor's pixels)."""

    def __init__(self, path: "str | os.PathLike[str]",
                 image_size: Optional[Tuple[int, int]] = None, *,
                 hf_version: Optional[int] = None, backend: Optional[str] = None,
                 elastic: Optional[str] = None, preset: str = "donut",
                 **loader_options: Any) -> None:
        self.path = os.fspath(path)
        self.preset = preset
        if image_size is None and preset not in _QWEN_PRESETS + ("idefics3",):
            raise docfeed.InvalidArgumentError(
                f"image_size (height, width) is required with preset={preset!r}")
        self.image_size = None if image_size is None else tuple(image_size)
        self.hf_version = hf_version
        self.backend = backend
        # What a resume from a checkpoint of another world size must keep (the `elastic` of
        # docfeed.Loader.load_state_dict): None, "same", "global_batch" or "rank_batch".
        if elastic not in (None, "same", "global_batch", "rank_batch"):
            raise docfeed.InvalidArgumentError(
                f"elastic must be None, 'same', 'global_batch' or 'rank_batch', not {elastic!r}")
        self.elastic = elastic
        self.loader_options = loader_options
        self._num_samples: Optional[int] = None
        # (hf_version, backend, reason) of the last loader() call.
        self.generation: Optional[Tuple[int, str, str]] = None

    def __len__(self) -> int:
        """Samples in the dataset, from its manifest and index (no loader, no image read)."""
        if self._num_samples is None:
            self._num_samples = int(_docfeed.dataset_info(self.path)["num_samples"])
        return self._num_samples

    def choose_generation(self, processor: Any = None) -> Tuple[int, str, str]:
        """The processor generation to reproduce: hf_version / backend as given here, the rest
        from processor_generation(processor)."""
        if self.hf_version is not None and self.backend is not None:
            return self.hf_version, self.backend, "given to DocfeedDataset"
        if self.hf_version == 4:
            return 4, "pil", "hf_version=4 given to DocfeedDataset"
        auto_version, auto_backend, reason = processor_generation(processor)
        stored = _docfeed.dataset_info(self.path)["preprocess"]
        if stored is not None and self.hf_version is None and self.backend is None:
            # The pages were resized (or recovered from tensors) for one generation: loading
            # them as another is refused by the loader, and they cannot be resized again.
            version, backend = int(stored.get("hf_version", 4)), stored.get("backend", "pil")
            if (version, backend) != (auto_version, auto_backend):
                logger.warning(
                    "docfeed: %s stores pages prepared for transformers %d.x (%s backend), "
                    "not for the processor this run would use (%d.x %s: %s); loading them as "
                    "stored. Re-pack from the originals to change.", self.path, version, backend,
                    auto_version, auto_backend, reason)
            return version, backend, "the dataset's stored pages were prepared for it"
        if self.hf_version is not None:  # 5, backend from the processor or environment
            backend = auto_backend if auto_version == 5 else "pil"
            return self.hf_version, backend, f"hf_version given; backend: {reason}"
        if self.backend is not None:
            return auto_version, self.backend, f"backend given; hf_version: {reason}"
        return auto_version, auto_backend, reason

    def loader(self, processor: Any = None, **defaults: Any) -> docfeed.Loader:
        options = dict(defaults)
        options.update(self.loader_options)
        if self.preset in _QWEN_PRESETS:
            return self._qwen_loader(processor, options)
        if self.preset == "idefics3":
            return self._idefics3_loader(processor, options)
        hf_version, backend, reason = self.choose_generation(processor)
        self.generation = (hf_version, backend, reason)
        logger.info("docfeed: %s gives the pixels of transformers %d.x DonutImageProcessor "
                    "(%s backend): %s", self.path, hf_version, backend, reason)
        if self.preset != "donut":
            options["preset"] = self.preset
        return docfeed.Loader(self.path, image_size=self.image_size, hf_version=hf_version,
                              backend=backend, **options)

    def _qwen_loader(self, processor: Any, options: Dict[str, Any]) -> docfeed.Loader:
        """A Qwen preset's loader: the processor's smart_resize settings unless given, the
        installed generation unless hf_version is given; CPU batches (the preset has no GPU
        stage; Trainer's _prepare_inputs moves them)."""
        hf_version, backend, reason = qwen_generation(processor)
        if self.hf_version is not None:
            hf_version, backend, reason = self.hf_version, "pil", "given to DocfeedDataset"
        if self.backend is not None:
            backend = self.backend
        self.generation = (hf_version, backend, reason)
        image_processor = getattr(processor, "image_processor", None)
        if image_processor is not None:
            from docfeed import chat_labels

            found = chat_labels.processor_settings(processor, {})
            found["temporal_patch_size"] = getattr(image_processor, "temporal_patch_size", 2)
            for name in _QWEN_SETTINGS:
                options.setdefault(name, int(found[name]))
        options["device"] = None
        options.pop("pad", None)  # the eval loader's centred padding: no padding here
        logger.info("docfeed: %s gives the pixels of transformers %d.x Qwen2VLImageProcessor "
                    "(%s backend): %s", self.path, hf_version, backend, reason)
        return docfeed.Loader(self.path, preset=self.preset, hf_version=hf_version,
                              backend=backend, **options)


    def _idefics3_loader(self, processor: Any, options: Dict[str, Any]) -> docfeed.Loader:
        """The idefics3 preset's loader: the processor's longest_edge, max_image_size and
        do_image_splitting unless given, the installed generation's PIL processor unless
        hf_version is given (5.x's default torchvision Idefics3ImageProcessor is not reproduced:
        a warning names it); CPU batches (the Trainer moves them)."""
        hf_version = self.hf_version or _transformers_major()
        image_processor = getattr(processor, "image_processor", None)
        name = type(image_processor).__name__ if image_processor is not None else ""
        reason = f"transformers {transformers.__version__} is installed"
        if image_processor is not None:
            from docfeed import chat_labels

            if hf_version >= 5 and not name.endswith("Pil"):
                logger.warning("docfeed: the processor's %s (transformers %s) is not reproduced; "
                               "docfeed gives %sPil's pixels", name, transformers.__version__,
                               name)
            found = chat_labels.processor_settings(processor, {})
            options.setdefault("longest_edge", found["longest_edge"])
            options.setdefault("max_image_size", found["max_image_size"])
            options.setdefault("do_image_splitting", bool(found["do_image_splitting"]))
            reason = f"the processor is {name} (transformers {transformers.__version__})"
        self.generation = (hf_version, "pil", reason)
        options["device"] = None
        options.pop("pad", None)  # the eval loader's centred padding: no padding here
        logger.info("docfeed: %s gives the pixels of transformers %d.x Idefics3ImageProcessor "
                    "(PIL): %s", self.path, hf_version, reason)
        return docfeed.Loader(self.path, preset=self.preset, hf_version=hf_version, **options)


class _TrainLoader:
    """The object Trainer iterates: a docfeed.Loader that applies a checkpoint's state when the
    Trainer starts its first epoch (set_epoch), and otherwise starts epochs from 0.

    The Trainer derives the epoch to resume from global_step and the steps of an epoch; after a
    resume that kept the per-rank batch under another world size (or one whose saved epoch has
    nothing left), that is not the saved epoch. docfeed's epochs follow the saved state instead:
    the Trainer's epoch e reads docfeed epoch e + epoch_offset."""

    def __init__(self, loader: docfeed.Loader, pending: Optional[Dict[str, Any]],
                 elastic: Optional[str] = None) -> None:
        self.loader = loader
        self.pending = pending
        self.elastic = elastic
        self.epoch_offset = 0

    def set_epoch(self, epoch: int) -> None:
        pending, self.pending = self.pending, None
        epoch = int(epoch)
        if pending is None:
            self.loader.set_epoch(epoch + self.epoch_offset)
            return
        self.loader.load_state_dict(pending, elastic=self.elastic)
        resumed = self.loader.epoch
        if len(self.loader) == 0:
            # Nothing left of the saved epoch for this shape (it was over, or the tail is smaller
            # than one step and dropped): an empty epoch would make the Trainer stop training.
            resumed += 1
            self.loader.set_epoch(resumed)
        self.epoch_offset = resumed - epoch
        if self.epoch_offset != 0:
            logger.warning(
                "docfeed: the Trainer resumes at its epoch %d, the checkpoint's data at docfeed "
                "epoch %d (position %d; saved with world_size %s, batch_size %s, now %d x %d): "
                "docfeed epoch = Trainer epoch + (%d)", epoch,
                resumed, self.loader.state_dict()["position"], pending.get("world_size"),
                pending.get("batch_size"), self.loader.world_size, self.loader.batch_size,
                self.epoch_offset)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        return iter(self.loader)

    def state_dict(self) -> Dict[str, int]:
        return self.loader.state_dict()


def _loss_ignores_num_items(model: Any) -> bool:
    """True for a VisionEncoderDecoderModel (Donut) whose forward takes **kwargs but computes a
    per-batch mean loss without `num_items_in_batch` (transformers 5.x; 4.57 divides the token
    sum by it), unless the model says what it accepts itself (`accepts_loss_kwargs`).

    Trainer decides from the forward signature alone: with **kwargs it counts the label tokens of
    the whole accumulation window, passes the count as num_items_in_batch and does not divide the
    loss by gradient_accumulation_steps, trusting the model to have divided its token sum by that
    count. A model that ignores it returns its own batch mean, so with accumulation over N
    batches the logged and backpropagated loss is about N times too large (transformers 5.23:
    2x at N = 2)."""
    if hasattr(model, "accepts_loss_kwargs"):
        return False
    if not isinstance(model, transformers.VisionEncoderDecoderModel):
        return False
    try:
        source = inspect.getsource(type(model).forward)
    except (OSError, TypeError):  # no source: leave Trainer's choice alone
        return False
    return "num_items_in_batch" not in source


def _check_loss_scaling(trainer: Any) -> None:
    model = trainer.accelerator.unwrap_model(trainer.model)
    trainer._docfeed_rescale_loss = _loss_ignores_num_items(model)


def _resume_batch_size(elastic: Optional[str], pending: Optional[Dict[str, Any]], world_size: int,
                       batch_size: int) -> int:
    """The per-device batch of a run resuming `pending` (None: not resuming). transformers 4.x
    restores the checkpoint's own per-device batch on resume (TrainerState.train_batch_size,
    whatever per_device_train_batch_size says), so keeping the global batch under another world
    size means rescaling it here: the checkpoint's world_size x batch_size over this run's
    ranks."""
    if elastic != "global_batch" or pending is None or not pending.get("world_size"):
        return batch_size
    saved_world, saved_batch = int(pending["world_size"]), int(pending["batch_size"])
    global_batch = saved_world * saved_batch
    if global_batch % world_size != 0:
        raise docfeed.InvalidArgumentError(
            f"elastic='global_batch': the checkpoint was taken with world_size {saved_world} and "
            f"batch_size {saved_batch} (global batch {global_batch}), which does not divide over "
            f"this run's world_size {world_size}; resume on a world size dividing {global_batch}, "
            f"or keep the per-device batch (elastic='rank_batch')")
    if global_batch // world_size != batch_size:
        logger.warning("docfeed: resuming a checkpoint of world_size %d x batch_size %d on %d "
                       "ranks with the global batch kept: per-device batch %d", saved_world,
                       saved_batch, world_size, global_batch // world_size)
    return global_batch // world_size


class DocfeedTrainerMixin:
    """Mix into a transformers Trainer subclass (see the module docstring)."""

    _docfeed_train: Optional[_TrainLoader] = None
    _docfeed_pending: Optional[Dict[str, int]] = None

    def _docfeed_processor(self):
        """The Trainer's processing_class (a DonutProcessor or image processor), if any."""
        return getattr(self, "processing_class", None)

    _docfeed_rescale_loss = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _check_loss_scaling(self)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """Trainer's loss; for a model that ignores num_items_in_batch (see
        _loss_ignores_num_items) its batch mean becomes the batch's token sum over the window's
        token count, the loss transformers 4.57 computes: over an accumulation window the
        step's loss is then the mean over all its label tokens, as one batch of the whole window
        without accumulation gives."""
        result = super().compute_loss(model, inputs, return_outputs=return_outputs,
                                      num_items_in_batch=num_items_in_batch)
        if (not self._docfeed_rescale_loss or num_items_in_batch is None
                or not self.model_accepts_loss_kwargs or self.label_smoother is not None
                or self.compute_loss_func is not None):
            return result
        loss, outputs = result if return_outputs else (result, None)
        tokens = inputs["labels"].ne(-100).sum().to(loss.device)
        loss = loss * tokens / num_items_in_batch
        return (loss, outputs) if return_outputs else loss

    def _docfeed_device(self):
        device = self.args.device
        return device if getattr(device, "type", "cpu") == "cuda" else None

    def get_train_dataloader(self):
        if not isinstance(self.train_dataset, DocfeedDataset):
            return super().get_train_dataloader()
        args = self.args
        seed = args.data_seed if args.data_seed is not None else args.seed
        self._train_batch_size = _resume_batch_size(self.train_dataset.elastic,
                                                    self._docfeed_pending, args.world_size,
                                                    self._train_batch_size)
        loader = self.train_dataset.loader(
            processor=self._docfeed_processor(), batch_size=self._train_batch_size, seed=seed, drop_last=args.dataloader_drop_last,
            device=self._docfeed_device(), max_held=args.gradient_accumulation_steps + 2)
        self._docfeed_train = _TrainLoader(loader, self._docfeed_pending,
                                           self.train_dataset.elastic)
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
        return _TrainLoader(dataset.loader(processor=self._docfeed_processor(), **defaults), None)

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
        _check_loss_scaling(trainer)
    return trainer

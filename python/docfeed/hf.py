"""Hugging Face Trainer integration: docfeed's loader feeds `Trainer` / `Seq2SeqTrainer`.

The recipe change is one import and one dataset argument:

    from docfeed.hf import DocfeedDataset, Seq2SeqTrainer   # instead of transformers'
    trainer = Seq2SeqTrainer(model=model, args=args,
                             train_dataset=DocfeedDataset("train.docfeed", image_size=(1280, 960)))
    trainer.train(resume_from_checkpoint=True)

Models that train through it (each a preset of DocfeedDataset, whose batches hold the keyword
arguments the model's forward takes; tests/python/test_hf_*_train.py and test_hf_trainer.py
train a tiny random-initialized one of each on both transformers generations, resuming
mid-epoch without replay):
  * Donut (VisionEncoderDecoderModel, DonutSwin + MBart): preset "donut", pixel_values + labels.
  * Nougat (VisionEncoderDecoderModel, DonutSwin + MBart): preset "nougat", pixel_values +
    labels; its settings from the Trainer's processing_class' NougatImageProcessor.
  * Pix2Struct (Pix2StructForConditionalGeneration): preset "pix2struct", flattened_patches +
    attention_mask + labels; max_patches / patch_size from its Pix2StructImageProcessor.
  * Qwen2-VL / Qwen2.5-VL: preset "qwen2-vl" / "qwen2.5-vl" on a dataset packed with
    docfeed.pack(processor=...): pixel_values, image_grid_thw, input_ids, attention_mask, labels.
  * Idefics3 / SmolVLM / SmolDocling (Idefics3ForConditionalGeneration): preset "idefics3" on a
    dataset packed with docfeed.pack(processor=...): pixel_values, pixel_attention_mask,
    input_ids, attention_mask, labels.
Labels for Donut, Nougat and Pix2Struct are the text targets `docfeed pack --tokenizer` /
docfeed.pack(tokenizer=...) store (include the end-of-sequence token in the text).

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
  * Donut's pixels are those of the DonutImageProcessor the run would use (processor_generation):
    the Trainer's processing_class when it is a Donut processor (DonutImageProcessor of 4.x;
    DonutImageProcessorPil or the torchvision DonutImageProcessor of 5.x), else what the
    installed transformers' AutoImageProcessor returns (4.x: the PIL processor; 5.x: the
    torchvision backend when torchvision is installed, else the PIL one). A dataset whose pages
    were stored resized (`pack --preprocess`, or migrated from saved tensors) keeps the
    generation it records, with a warning when that is not the one the run would use.
    DocfeedDataset(..., hf_version=, backend=) overrides all of it; the choice and its reason
    are logged (logger "docfeed.hf", INFO) and kept in DocfeedDataset.generation. Nougat and
    Pix2Struct reproduce the PIL processor of the installed generation (pil_preset_generation),
    Qwen the one of qwen_generation.
  * Gradient accumulation: the loss of a VisionEncoderDecoderModel (Donut, Nougat) is the mean
    over the accumulation window's label tokens on every transformers version, as 4.57
    computes it, and so is a Pix2StructForConditionalGeneration's on 5.x (5.x's models ignore
    num_items_in_batch; see _loss_ignores_num_items and compute_loss). 4.57's Pix2Struct takes
    no **kwargs: Trainer divides its batch means by the accumulation steps, left as it is.

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
from docfeed.chat_labels import size_value

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


# The presets whose processors docfeed reproduces on their PIL / numpy path only (backend
# "pil"), with the image processor class each takes its settings from.
_PIL_PRESETS = {"nougat": "NougatImageProcessor", "pix2struct": "Pix2StructImageProcessor"}
# NougatImageProcessor's steps the nougat preset always takes: a processor with one of them off
# asks for pixels docfeed does not give.
_NOUGAT_STEPS = ("do_crop_margin", "do_resize", "do_thumbnail", "do_pad", "do_rescale",
                 "do_normalize")


def pil_preset_generation(preset: str, processor: Any = None) -> Tuple[int, str, str]:
    """(hf_version, backend, reason) for preset "nougat" or "pix2struct", which reproduce the
    PIL / numpy processor of each transformers generation only: hf_version 4 on transformers
    4.x (NougatImageProcessor, Pix2StructImageProcessor), 5 on 5.x (NougatImageProcessorPil,
    Pix2StructImageProcessorPil); backend "pil". `processor` (or its image_processor) of the
    family that docfeed does not reproduce (5.x's torchvision NougatImageProcessor /
    Pix2StructImageProcessor, what AutoImageProcessor builds when torchvision is installed;
    4.x's NougatImageProcessorFast) gets a warning naming it: the pixels are then the PIL
    processor's of the same generation."""
    version = transformers.__version__
    family = _PIL_PRESETS[preset]
    hf_version = 5 if _transformers_major() >= 5 else 4
    image_processor = getattr(processor, "image_processor", processor)
    name = type(image_processor).__name__ if image_processor is not None else ""
    if not name.startswith(family):
        return hf_version, "pil", f"transformers {version} is installed"
    pil_name = family + "Pil" if hf_version >= 5 else family
    if name != pil_name and getattr(image_processor, "backend", None) != "pil":
        logger.warning("docfeed: the processor's %s (transformers %s) is not reproduced; docfeed "
                       "gives %s's pixels", name, version, pil_name)
    return hf_version, "pil", f"the processor is {name} (transformers {version})"


def _nougat_settings(image_processor: Any) -> Dict[str, Any]:
    """The nougat preset's loader options from a NougatImageProcessor: image_size (its size),
    align_long_axis (do_align_long_axis), image_mean and image_std. InvalidArgumentError when it
    skips a step the preset always takes (docfeed would give other pixels than it)."""
    name = type(image_processor).__name__
    off = [step for step in _NOUGAT_STEPS if getattr(image_processor, step, True) is False]
    rescale = getattr(image_processor, "rescale_factor", None)
    if rescale is not None and abs(float(rescale) - 1 / 255) > 1e-12:
        off.append(f"rescale_factor={rescale}")
    if off:
        raise docfeed.InvalidArgumentError(
            f"processor: {name} has {', '.join(off)}; the nougat preset always crops the "
            "margin, resizes, thumbnails, pads and rescales by 1/255 then normalizes")
    out: Dict[str, Any] = {}
    size = getattr(image_processor, "size", None)
    height, width = size_value(size, "height"), size_value(size, "width")
    if height is not None and width is not None:
        out["image_size"] = (int(height), int(width))
    if getattr(image_processor, "do_align_long_axis", None) is not None:
        out["align_long_axis"] = bool(image_processor.do_align_long_axis)
    for key in ("image_mean", "image_std"):
        if getattr(image_processor, key, None) is not None:
            out[key] = [float(v) for v in getattr(image_processor, key)]
    return out


def _pix2struct_settings(image_processor: Any) -> Dict[str, Any]:
    """The pix2struct preset's loader options from a Pix2StructImageProcessor: max_patches and
    patch_size. InvalidArgumentError for is_vqa (a header rendered onto the page) and
    do_normalize=False, which the preset does not offer."""
    name = type(image_processor).__name__
    if getattr(image_processor, "is_vqa", False):
        raise docfeed.InvalidArgumentError(
            f"processor: {name} has is_vqa=True (the question rendered as a header onto the "
            "page); the pix2struct preset does not render headers")
    if getattr(image_processor, "do_normalize", True) is False:
        raise docfeed.InvalidArgumentError(
            f"processor: {name} has do_normalize=False; the pix2struct preset always "
            "standardizes each page")
    out: Dict[str, Any] = {}
    if getattr(image_processor, "max_patches", None) is not None:
        out["max_patches"] = int(image_processor.max_patches)
    patch = getattr(image_processor, "patch_size", None)
    height, width = size_value(patch, "height"), size_value(patch, "width")
    if height is not None and width is not None:
        out["patch_size"] = {"height": int(height), "width": int(width)}
    return out


class DocfeedDataset:
    """A docfeed dataset and the docfeed.Loader options a Trainer should use with it. batch
    size, seed, drop_last, rank/world size and device come from the Trainer unless given here;
    any other docfeed.Loader option (pad=, num_threads=, ...) may be given as a keyword.

    Each preset's batches hold the keyword arguments its model's forward takes:
    * "donut" (default): pixel_values and labels (a dataset packed with a tokenizer), for a
      VisionEncoderDecoderModel. image_size (height, width) is required.
    * "nougat": the same keys, for Nougat's VisionEncoderDecoderModel (Donut-Swin encoder, MBart
      decoder). image_size, align_long_axis, image_mean and image_std default to the Trainer's
      processing_class when it is (or holds) a NougatImageProcessor (its size,
      do_align_long_axis, image_mean, image_std; a processor skipping a step the preset always
      takes, such as do_crop_margin=False, is refused), else to what a dataset packed with
      --preprocess nougat records, else to the preset's (896 x 672). pad: "random" (docfeed's
      augmentation, as for Donut; the default) or "center" (the processor's own padding).
    * "pix2struct": flattened_patches, attention_mask and labels, for
      Pix2StructForConditionalGeneration. max_patches and patch_size default to the
      processing_class' Pix2StructImageProcessor (is_vqa and do_normalize=False are refused),
      else to what a dataset packed with --stored-form patches records (its rows load with
      those only), else to the preset's (2048, 16 x 16); image_size does not apply.
    * "qwen2-vl" / "qwen2.5-vl" (a dataset packed with docfeed.pack(processor=...)):
      pixel_values, image_grid_thw, input_ids, attention_mask and labels, for
      Qwen2VLForConditionalGeneration / Qwen2_5_VLForConditionalGeneration; min_pixels,
      max_pixels, patch_size, merge_size and temporal_patch_size default to the Trainer's
      processing_class' image processor (else the preset's defaults), hf_version and backend to
      its generation (qwen_generation); image_size does not apply.
    * "idefics3" (Idefics3 / SmolVLM / SmolDocling; a dataset packed with
      docfeed.pack(processor=...) of an Idefics3Processor or SmolVLMProcessor): pixel_values,
      pixel_attention_mask, input_ids, attention_mask and labels, for
      Idefics3ForConditionalGeneration; longest_edge, max_image_size and do_image_splitting
      default to the Trainer's processing_class' image processor, hf_version to the installed
      transformers (the PIL processor's pixels); image_size does not apply.
    Options given here win over the processor's. hf_version / backend: for nougat and
    pix2struct (PIL processors only), pil_preset_generation; for donut, choose_generation.
    The pix2struct, Qwen and idefics3 batches stay on the CPU (those presets have no GPU stage; the
    Trainer moves them); donut and nougat use the GPU stage when the Trainer trains on CUDA."""

    def __init__(self, path: "str | os.PathLike[str]",
                 image_size: Optional[Tuple[int, int]] = None, *,
                 hf_version: Optional[int] = None, backend: Optional[str] = None,
                 elastic: Optional[str] = None, preset: str = "donut",
                 **loader_options: Any) -> None:
        self.path = os.fspath(path)
        self.preset = preset
        if image_size is None and preset == "donut":
            raise docfeed.InvalidArgumentError(
                f"image_size (height, width) is required with preset={preset!r}")
        if image_size is not None and preset in _QWEN_PRESETS + ("pix2struct", "idefics3"):
            raise docfeed.InvalidArgumentError(
                f"image_size does not apply to preset={preset!r} (its pages keep their aspect "
                "ratio within the preset's own limits)")
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
        if self.preset in _PIL_PRESETS:
            return self._pil_preset_loader(processor, options)
        hf_version, backend, reason = self.choose_generation(processor)
        self.generation = (hf_version, backend, reason)
        logger.info("docfeed: %s gives the pixels of transformers %d.x DonutImageProcessor "
                    "(%s backend): %s", self.path, hf_version, backend, reason)
        if self.preset != "donut":
            options["preset"] = self.preset
        return docfeed.Loader(self.path, image_size=self.image_size, hf_version=hf_version,
                              backend=backend, **options)

    def _pil_preset_loader(self, processor: Any, options: Dict[str, Any]) -> docfeed.Loader:
        """A nougat or pix2struct loader: the generation from pil_preset_generation (or as
        given, or for nougat the one its stored pages were prepared for), the settings of the
        processor's image processor of the family unless given (see the class docstring)."""
        hf_version, backend, reason = pil_preset_generation(self.preset, processor)
        stored = _docfeed.dataset_info(self.path)["preprocess"]
        if stored is not None and stored.get("preset") != self.preset:
            stored = None  # pages of another preset: the loader refuses them, naming both
        if self.hf_version is not None:
            hf_version, reason = self.hf_version, "given to DocfeedDataset"
        elif stored is not None:
            version = int(stored.get("hf_version", 4))
            if version != hf_version:
                logger.warning(
                    "docfeed: %s stores pages prepared for transformers %d.x, not for the "
                    "processor this run would use (%d.x: %s); loading them as stored. Re-pack "
                    "from the originals to change.", self.path, version, hf_version, reason)
            hf_version, reason = version, "the dataset's stored pages were prepared for it"
        if self.backend is not None:
            backend = self.backend  # anything but "pil" is refused by the loader, saying why
        self.generation = (hf_version, backend, reason)
        found: Dict[str, Any] = {}
        image_processor = getattr(processor, "image_processor", processor)
        if type(image_processor).__name__.startswith(_PIL_PRESETS[self.preset]):
            settings = _nougat_settings if self.preset == "nougat" else _pix2struct_settings
            found = settings(image_processor)
        elif stored is not None and stored.get("stored_form") == "patches":
            # Pix2Struct's stored rows load only with the settings they were made for.
            found = {"max_patches": int(stored["max_patches"]),
                     "patch_size": {"height": int(stored["patch_height"]),
                                    "width": int(stored["patch_width"])}}
        elif stored is not None and self.preset == "nougat":
            # Nougat's stored pages: their size and alignment. Pix2Struct's page form keeps each
            # page at its own size (its record's height and width are 0): the loader's settings.
            found = {"image_size": (int(stored["height"]), int(stored["width"])),
                     "align_long_axis": bool(stored.get("align_long_axis", False))}
        image_size = self.image_size or found.pop("image_size", None)
        found.pop("image_size", None)
        for name, value in found.items():
            options.setdefault(name, value)
        if self.preset == "pix2struct":
            options["device"] = None  # no GPU stage: Trainer's _prepare_inputs moves the batch
            options.pop("pad", None)  # the eval loader's centred padding: no padding here
        logger.info("docfeed: %s gives the pixels of transformers %d.x %s (%s backend): %s",
                    self.path, hf_version, _PIL_PRESETS[self.preset], backend, reason)
        return docfeed.Loader(self.path, image_size=image_size, preset=self.preset,
                              hf_version=hf_version, backend=backend, **options)

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
        a warning names it); CPU batches (the Trainer moves them). A dataset packed with
        --preprocess idefics3 is loaded with the generation its pages were prepared for (unless
        hf_version is given) and, without a processor, their settings."""
        hf_version = self.hf_version or _transformers_major()
        image_processor = getattr(processor, "image_processor", None)
        name = type(image_processor).__name__ if image_processor is not None else ""
        reason = f"transformers {transformers.__version__} is installed"
        stored = _docfeed.dataset_info(self.path)["preprocess"]
        stored_generation = False
        if stored is not None and stored.get("preset") == "idefics3":
            # Pages prepared at pack time cannot be prepared again: other settings or another
            # generation are refused by the loader (naming both).
            if self.hf_version is None:
                version = int(stored.get("hf_version", 4))
                if version != hf_version:
                    logger.warning(
                        "docfeed: %s stores pages prepared for transformers %d.x, not for the "
                        "installed %s; loading them as stored. Re-pack from the originals to "
                        "change.", self.path, version, transformers.__version__)
                hf_version, stored_generation = version, True
                reason = "the dataset's stored pages were prepared for it"
            if image_processor is None:
                for key in ("longest_edge", "max_image_size", "do_image_splitting"):
                    options.setdefault(key, stored[key])
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
            if not stored_generation:
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


# The models whose loss is a plain per-batch mean of the cross-entropy over the label tokens
# (labels unshifted: the decoder reads them shifted right), and where it is computed: the
# model's own forward, or its decoder's (Pix2Struct's text model).
_MEAN_LOSS_MODELS = {"VisionEncoderDecoderModel": False, "Pix2StructForConditionalGeneration": True}


def _loss_ignores_num_items(model: Any) -> bool:
    """True for a VisionEncoderDecoderModel (Donut, Nougat) or Pix2StructForConditionalGeneration
    whose forward takes **kwargs but computes a per-batch mean loss without
    `num_items_in_batch` (transformers 5.x; 4.57's VisionEncoderDecoderModel divides the token
    sum by it, 4.57's Pix2Struct takes no **kwargs), unless the model says what it accepts
    itself (`accepts_loss_kwargs`).

    Trainer decides from the forward signature alone: with **kwargs it counts the label tokens of
    the whole accumulation window, passes the count as num_items_in_batch and does not divide the
    loss by gradient_accumulation_steps, trusting the model to have divided its token sum by that
    count. A model that ignores it returns its own batch mean, so with accumulation over N
    batches the logged and backpropagated loss is about N times too large (transformers 5.23:
    2x at N = 2)."""
    if hasattr(model, "accepts_loss_kwargs"):
        return False
    in_decoder = next((v for k, v in _MEAN_LOSS_MODELS.items()
                       if isinstance(model, getattr(transformers, k, ()))), None)
    if in_decoder is None:
        return False
    forwards = [type(model).forward]
    if in_decoder:
        forwards.append(type(model.decoder).forward)
    try:
        sources = [inspect.getsource(forward) for forward in forwards]
    except (OSError, TypeError):  # no source: leave Trainer's choice alone
        return False
    return not any("num_items_in_batch" in source for source in sources)


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

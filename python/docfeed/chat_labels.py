"""Chat-template token columns for Qwen2-VL / Qwen2.5-VL and Idefics3 (SmolVLM, SmolDocling)
fine-tuning, computed at pack time.

docfeed.pack(dataset, out, processor=PROC, prompt=... or prompt_column=..., text_column=...)
adds three list<int64> columns per row:

  input_ids       what PROC(text=PROC.apply_chat_template(messages), images=[page]) gives: the
                  user's chat template applied to a user turn (the page, then the prompt) and an
                  assistant turn (the row's target text), the template's one image placeholder
                  expanded as PROC's text side expands it for that page, tokenized by
                  PROC.tokenizer:
                    Qwen2-VL  <|image_pad|> repeated grid_h * grid_w / merge_size**2 times, the
                              page's grid from smart_resize (min_pixels, max_pixels, patch_size,
                              merge_size);
                    Idefics3  <image> replaced by the processor's own text for the page
                              (5.x replace_image_token, 4.x get_image_prompt_string): a
                              <fake_token_around_image><row_r_col_c> run of image_seq_len
                              <image> tokens per tile, then the global image's; rows and cols
                              from the longest-edge resize and the tiling (longest_edge,
                              max_image_size, do_image_splitting);
  attention_mask  1 for every token (a row is never padded on disk);
  labels          -100 on the prompt (everything the template writes before the assistant's
                  answer, image tokens included) and after the assistant's end-of-turn token;
                  the answer's ids and its end-of-turn token (<|im_end|> for Qwen,
                  <end_of_utterance> for Idefics3, else the tokenizer's eos) as they are.

The page's grid comes from the header of the stored image (its size after the EXIF orientation,
which the presets apply) and the preset's own geometry in C++ (docfeed::Preset::GridOf, the code
the loader resizes with: docs/qwen-vl-preprocessing.md, docs/idefics3-preprocessing.md), so no
page is decoded or resized here.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from docfeed.errors import InvalidArgumentError

COLUMNS = ("input_ids", "attention_mask", "labels")
IGNORE_INDEX = -100
QWEN = "qwen2-vl"
IDEFICS3 = "idefics3"


def page_size(data: bytes) -> Tuple[int, int]:
    """(height, width) of an encoded image after its EXIF orientation, from its header."""
    from docfeed import _docfeed

    return _docfeed.page_size(data)


def processor_family(processor: Any) -> str:
    """QWEN or IDEFICS3: the image processor the user's processor holds (Qwen2VL* /
    Qwen2_5_VL*, or Idefics3* / SmolVLM*). InvalidArgumentError for anything else."""
    image_processor = getattr(processor, "image_processor", None)
    name = type(image_processor).__name__
    if image_processor is None:
        raise InvalidArgumentError("processor has no image_processor (a Qwen2VLProcessor, "
                                   "Qwen2_5_VLProcessor, Idefics3Processor or SmolVLMProcessor "
                                   "is expected)")
    if name.startswith(("Qwen2VL", "Qwen2_5_VL")):
        return QWEN
    if name.startswith(("Idefics3", "SmolVLM")):
        return IDEFICS3
    raise InvalidArgumentError(
        f"processor.image_processor is a {name}: chat-template token columns are computed for "
        "Qwen2-VL / Qwen2.5-VL and Idefics3 / SmolVLM processors")


def size_value(size: Any, key: str) -> Any:
    """size[key] of an image processor's size (a dict in 4.x, a dict or SizeDict in 5.x)."""
    return size.get(key) if isinstance(size, dict) else getattr(size, key, None)


def processor_settings(processor: Any, given: Dict[str, Optional[int]]) -> Dict[str, int]:
    """The settings the image tokens are counted with: as given, else the processor's.
    Qwen: min_pixels, max_pixels, patch_size, merge_size (its size dict's shortest_edge /
    longest_edge, as it resizes with them). Idefics3: longest_edge (size), max_image_size
    (max_image_size's longest_edge), do_image_splitting (0 or 1) and image_seq_len (the
    processor's, the <image> tokens per tile)."""
    family = processor_family(processor)
    image_processor = processor.image_processor
    size = getattr(image_processor, "size", None)
    if family == QWEN:
        found = {"min_pixels": size_value(size, "shortest_edge") or getattr(
                     image_processor, "min_pixels", None),
                 "max_pixels": size_value(size, "longest_edge") or getattr(
                     image_processor, "max_pixels", None),
                 "patch_size": getattr(image_processor, "patch_size", None),
                 "merge_size": getattr(image_processor, "merge_size", None)}
    else:
        splitting = getattr(image_processor, "do_image_splitting", None)
        found = {"longest_edge": size_value(size, "longest_edge"),
                 "max_image_size": size_value(getattr(image_processor, "max_image_size", None),
                                               "longest_edge"),
                 "do_image_splitting": None if splitting is None else int(bool(splitting)),
                 "image_seq_len": getattr(processor, "image_seq_len", None)}
    out = {}
    for name, value in found.items():
        value = given.get(name) if given.get(name) is not None else value
        if value is None:
            owner = "processor" if name == "image_seq_len" else "processor.image_processor"
            raise InvalidArgumentError(f"{owner} has no {name}; pass {name}=")
        out[name] = int(value)
    return out


def page_grid(family: str, settings: Dict[str, int], size: Tuple[int, int]) -> Tuple[int, int]:
    """(rows, cols) of a page of `size` (height, width): Qwen's grid_h x grid_w patches,
    Idefics3's image_rows x image_cols tiles; ValueError for a page the preset refuses."""
    from docfeed import _docfeed
    from docfeed.errors import Error

    if family == QWEN:
        args = {k: settings[k] for k in ("min_pixels", "max_pixels", "patch_size", "merge_size")}
    else:
        args = {"longest_edge": settings["longest_edge"],
                "max_image_size": settings["max_image_size"],
                "do_image_splitting": bool(settings["do_image_splitting"])}
    try:
        _, rows, cols = _docfeed.page_grid(family, size[0], size[1], **args)
    except Error as e:
        raise ValueError(str(e)) from None
    return rows, cols


def processor_generation(processor: Any) -> Tuple[int, str]:
    """(hf_version, backend) of the processor's image processor, as the qwen2-vl preset names
    them: 4.x Qwen2VLImageProcessor (4, "pil"); 5.x Qwen2VLImageProcessorPil (5, "pil") and
    5.x Qwen2VLImageProcessor, the torchvision backend AutoProcessor gives (5, "torchvision").
    Anything else is taken as (4, "pil")."""
    image_processor = getattr(processor, "image_processor", processor)
    if not type(image_processor).__module__.startswith("transformers"):
        return 4, "pil"
    import transformers

    if int(transformers.__version__.split(".")[0]) < 5:
        return 4, "pil"
    return 5, "pil" if type(image_processor).__name__.endswith("Pil") else "torchvision"


def _idefics3_image_text(processor: Any) -> Callable[[int, int], str]:
    """(rows, cols) -> the text the processor's __call__ puts in place of <image> for a page of
    rows x cols tiles: its own code, found where its generation keeps it (transformers 5.x: the
    method replace_image_token; 4.x: get_image_prompt_string of the module that defines the
    processor's class or a base class's, Idefics3's and SmolVLM's each having one)."""
    if hasattr(processor, "replace_image_token"):
        return lambda rows, cols: processor.replace_image_token({"rows": [[rows]],
                                                                 "cols": [[cols]]}, 0)
    prompt_string = None
    for cls in type(processor).__mro__:
        prompt_string = getattr(sys.modules.get(cls.__module__), "get_image_prompt_string", None)
        if prompt_string is not None:
            break
    if prompt_string is None:
        from transformers.models.idefics3 import processing_idefics3

        prompt_string = processing_idefics3.get_image_prompt_string
    fake = getattr(processor, "fake_image_token", "<fake_token_around_image>")
    image = getattr(processor, "image_token", "<image>")
    global_image = getattr(processor, "global_image_tag", "<global-img>")
    seq_len = int(processor.image_seq_len)
    return lambda rows, cols: prompt_string(rows, cols, seq_len, fake, image, global_image)


class ChatLabeler:
    """Builds the token columns of one row at a time (see the module docstring)."""

    def __init__(self, processor: Any, settings: Dict[str, int], text_column: str,
                 prompt: Optional[str], prompt_column: Optional[str]) -> None:
        tokenizer = getattr(processor, "tokenizer", None)
        if tokenizer is None or not hasattr(processor, "apply_chat_template"):
            raise InvalidArgumentError(
                "processor must have .tokenizer, .image_processor and apply_chat_template (a "
                "Qwen2-VL or Idefics3 processor), got " + type(processor).__name__)
        if (prompt is None) == (prompt_column is None):
            raise InvalidArgumentError("give one of prompt= (the same text for every row) or "
                                       "prompt_column= (a column of prompts) with processor=")
        self.family = processor_family(processor)
        self.processor = processor
        self.tokenizer = tokenizer
        self.settings = settings
        self.text_column = text_column
        self.prompt = prompt
        self.prompt_column = prompt_column
        qwen = self.family == QWEN
        self.image_token = getattr(processor, "image_token", None) or (
            "<|image_pad|>" if qwen else "<image>")
        vocab = tokenizer.get_vocab()
        if self.image_token not in vocab:
            raise InvalidArgumentError(f"the processor's tokenizer has no image token "
                                       f"{self.image_token!r}")
        self.image_token_id = int(vocab[self.image_token])
        turn_end = "<|im_end|>" if qwen else getattr(processor, "end_of_utterance_token",
                                                     "<end_of_utterance>")
        end = turn_end if turn_end in vocab else getattr(tokenizer, "eos_token", None)
        if end is None or end not in vocab:
            raise InvalidArgumentError(f"the processor's tokenizer has neither {turn_end} nor an "
                                       "eos token to end the assistant's turn with")
        self.end_token_id = int(vocab[end])
        if tokenizer.pad_token_id is None:
            raise InvalidArgumentError("the processor's tokenizer has no pad token: the loader "
                                       "pads input_ids with it (set tokenizer.pad_token)")
        self.pad_token_id = int(tokenizer.pad_token_id)
        if not qwen:
            self._idefics3_text = _idefics3_image_text(processor)
        self.longest = 0  # the longest input_ids row so far

    def metadata(self) -> str:
        """The manifest's chat_labels record (docs/format.md section 9), as JSON text."""
        return json.dumps({"columns": list(COLUMNS), "preset": self.family,
                           "pad_token_id": self.pad_token_id,
                           "image_token_id": self.image_token_id,
                           "end_token_id": self.end_token_id, "longest": self.longest,
                           **self.settings}, sort_keys=True)

    @staticmethod
    def _text(row: Dict[str, Any], column: str, role: str, where: str) -> str:
        """row[column], which must be a string; errors name the row, the column and its role."""
        if column not in row:
            raise InvalidArgumentError(f"{where}: no column {column!r} ({role})")
        value = row[column]
        if not isinstance(value, str):
            raise InvalidArgumentError(f"{where}: column {column!r} is {type(value).__name__}, "
                                       "not a string")
        return value

    def _messages(self, row: Dict[str, Any], where: str) -> List[Dict[str, Any]]:
        answer = self._text(row, self.text_column, "text_column, the assistant's answer", where)
        prompt = self.prompt
        if self.prompt_column is not None:
            prompt = self._text(row, self.prompt_column, "prompt_column", where)
        user: List[Dict[str, Any]] = [{"type": "image"}]
        if prompt:
            user.append({"type": "text", "text": prompt})
        return [{"role": "user", "content": user},
                {"role": "assistant", "content": [{"type": "text", "text": answer}]}]

    def _image_text(self, grid: Tuple[int, int]) -> str:
        """What the processor's text side puts in place of the one image placeholder."""
        rows, cols = grid
        if self.family == QWEN:
            return self.image_token * (rows * cols // self.settings["merge_size"] ** 2)
        return self._idefics3_text(rows, cols)

    def _ids(self, text: str, image_text: str, where: str) -> List[int]:
        if text.count(self.image_token) != 1:
            raise InvalidArgumentError(
                f"{where}: the chat template wrote {text.count(self.image_token)} image "
                f"placeholders {self.image_token!r} for one page (it must write one)")
        return [int(t) for t in self.tokenizer(
            text.replace(self.image_token, image_text))["input_ids"]]

    def columns(self, row: Dict[str, Any], size: Tuple[int, int], where: str
                ) -> Dict[str, List[int]]:
        """input_ids, attention_mask and labels of `row`, whose page is `size` (height, width)
        as stored. Errors (InvalidArgumentError) start with `where` (the row)."""
        messages = self._messages(row, where)
        try:
            image_text = self._image_text(page_grid(self.family, self.settings, size))
        except ValueError as e:
            raise InvalidArgumentError(f"{where}: {e}") from None
        full = self.processor.apply_chat_template(messages, tokenize=False)
        prefix = self.processor.apply_chat_template(messages[:1], tokenize=False,
                                                    add_generation_prompt=True)
        if not full.startswith(prefix):
            raise InvalidArgumentError(
                f"{where}: the chat template's user turn with add_generation_prompt=True is not "
                "the start of the whole conversation's text, so the answer cannot be found")
        ids = self._ids(full, image_text, where)
        prompt_ids = self._ids(prefix, image_text, where)
        if ids[:len(prompt_ids)] != prompt_ids:
            raise InvalidArgumentError(
                f"{where}: the tokens of the prompt are not the first tokens of the "
                "conversation (the tokenizer merges across the start of the answer)")
        labels = [IGNORE_INDEX] * len(ids)
        for i in range(len(prompt_ids), len(ids)):
            labels[i] = ids[i]
            if ids[i] == self.end_token_id:
                break  # what the template writes after the end of the turn is not learned
        self.longest = max(self.longest, len(ids))
        return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels}

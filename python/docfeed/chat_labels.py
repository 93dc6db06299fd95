"""Chat-template token columns for Qwen2-VL / Qwen2.5-VL fine-tuning, computed at pack time.

docfeed.pack(dataset, out, processor=PROC, preprocess="qwen2.5-vl", prompt=... or
prompt_column=..., text_column=...) adds three list<int64> columns per row:

  input_ids       what PROC(text=PROC.apply_chat_template(messages), images=[page]) gives: the
                  user's chat template applied to a user turn (the page, then the prompt) and an
                  assistant turn (the row's target text), the image placeholder repeated
                  grid_t * grid_h * grid_w / merge_size**2 times for that page's grid, tokenized
                  by PROC.tokenizer;
  attention_mask  1 for every token (a row is never padded on disk);
  labels          -100 on the prompt (everything the template writes before the assistant's
                  answer, image tokens included) and after the assistant's end-of-turn token;
                  the answer's ids and its end-of-turn token (<|im_end|>, else the tokenizer's
                  eos) as they are.

The page's grid comes from the header of the stored image (its size after the EXIF orientation,
which the preset applies) and smart_resize with the processor's min_pixels, max_pixels,
patch_size and merge_size, as the qwen2-vl preset resizes it (docs/qwen-vl-preprocessing.md), so
no page is decoded or resized here.
"""
from __future__ import annotations

import io
import json
import math
from typing import Any, Dict, List, Optional, Tuple

from docfeed.errors import InvalidArgumentError

COLUMNS = ("input_ids", "attention_mask", "labels")
IGNORE_INDEX = -100


def smart_resize(height: int, width: int, factor: int, min_pixels: int,
                 max_pixels: int) -> Tuple[int, int]:
    """Qwen2VLImageProcessor's smart_resize (docs/qwen-vl-preprocessing.md, step 2)."""
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"absolute aspect ratio must be smaller than 200, got "
                         f"{max(height, width) / min(height, width)}")
    h = round(height / factor) * factor
    w = round(width / factor) * factor
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def page_size(data: bytes) -> Tuple[int, int]:
    """(height, width) of an encoded image after its EXIF orientation, from its header."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
        try:
            orientation = image.getexif().get(0x0112, 1)
        except Exception:  # noqa: BLE001 - an unreadable EXIF block is no rotation, as Pillow's
            orientation = 1
    if orientation in (5, 6, 7, 8):  # a quarter turn (with or without a flip)
        width, height = height, width
    return height, width


def processor_settings(processor: Any, given: Dict[str, Optional[int]]) -> Dict[str, int]:
    """min_pixels, max_pixels, patch_size, merge_size: as given, else the processor's image
    processor's (its size dict's shortest_edge / longest_edge, as it resizes with them)."""
    image_processor = getattr(processor, "image_processor", None)
    if image_processor is None:
        raise InvalidArgumentError("processor has no image_processor (a Qwen2VLProcessor or "
                                   "Qwen2_5_VLProcessor is expected)")
    size = getattr(image_processor, "size", None)

    def size_value(key: str) -> Any:
        if isinstance(size, dict):
            return size.get(key)
        return getattr(size, key, None)

    found = {"min_pixels": size_value("shortest_edge") or getattr(image_processor, "min_pixels",
                                                                  None),
             "max_pixels": size_value("longest_edge") or getattr(image_processor, "max_pixels",
                                                                 None),
             "patch_size": getattr(image_processor, "patch_size", None),
             "merge_size": getattr(image_processor, "merge_size", None)}
    out = {}
    for name, value in found.items():
        value = given.get(name) if given.get(name) is not None else value
        if value is None:
            raise InvalidArgumentError(f"processor.image_processor has no {name}; pass {name}=")
        out[name] = int(value)
    return out


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


class ChatLabeler:
    """Builds the token columns of one row at a time (see the module docstring)."""

    def __init__(self, processor: Any, settings: Dict[str, int], text_column: str,
                 prompt: Optional[str], prompt_column: Optional[str]) -> None:
        tokenizer = getattr(processor, "tokenizer", None)
        if tokenizer is None or not hasattr(processor, "apply_chat_template"):
            raise InvalidArgumentError(
                "processor must have .tokenizer, .image_processor and apply_chat_template (a "
                "Qwen2VLProcessor or Qwen2_5_VLProcessor), got " + type(processor).__name__)
        if (prompt is None) == (prompt_column is None):
            raise InvalidArgumentError("give one of prompt= (the same text for every row) or "
                                       "prompt_column= (a column of prompts) with processor=")
        self.processor = processor
        self.tokenizer = tokenizer
        self.settings = settings
        self.text_column = text_column
        self.prompt = prompt
        self.prompt_column = prompt_column
        self.image_token = getattr(processor, "image_token", None) or "<|image_pad|>"
        vocab = tokenizer.get_vocab()
        if self.image_token not in vocab:
            raise InvalidArgumentError(f"the processor's tokenizer has no image token "
                                       f"{self.image_token!r}")
        self.image_token_id = int(vocab[self.image_token])
        end = "<|im_end|>" if "<|im_end|>" in vocab else getattr(tokenizer, "eos_token", None)
        if end is None or end not in vocab:
            raise InvalidArgumentError("the processor's tokenizer has neither <|im_end|> nor an "
                                       "eos token to end the assistant's turn with")
        self.end_token_id = int(vocab[end])
        if tokenizer.pad_token_id is None:
            raise InvalidArgumentError("the processor's tokenizer has no pad token: the loader "
                                       "pads input_ids with it (set tokenizer.pad_token)")
        self.pad_token_id = int(tokenizer.pad_token_id)
        self.longest = 0  # the longest input_ids row so far

    def metadata(self) -> str:
        """The manifest's chat_labels record (docs/format.md section 9), as JSON text."""
        return json.dumps({"columns": list(COLUMNS), "pad_token_id": self.pad_token_id,
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

    def _ids(self, text: str, image_tokens: int, where: str) -> List[int]:
        if text.count(self.image_token) != 1:
            raise InvalidArgumentError(
                f"{where}: the chat template wrote {text.count(self.image_token)} image "
                f"placeholders {self.image_token!r} for one page (it must write one)")
        return [int(t) for t in self.tokenizer(
            text.replace(self.image_token, self.image_token * image_tokens))["input_ids"]]

    def columns(self, row: Dict[str, Any], size: Tuple[int, int], where: str
                ) -> Dict[str, List[int]]:
        """input_ids, attention_mask and labels of `row`, whose page is `size` (height, width)
        as stored. Errors (InvalidArgumentError) start with `where` (the row)."""
        messages = self._messages(row, where)
        s = self.settings
        factor = s["patch_size"] * s["merge_size"]
        try:
            h, w = smart_resize(size[0], size[1], factor, s["min_pixels"], s["max_pixels"])
        except ValueError as e:
            raise InvalidArgumentError(f"{where}: {e}") from None
        image_tokens = (h // s["patch_size"]) * (w // s["patch_size"]) // s["merge_size"] ** 2
        full = self.processor.apply_chat_template(messages, tokenize=False)
        prefix = self.processor.apply_chat_template(messages[:1], tokenize=False,
                                                    add_generation_prompt=True)
        if not full.startswith(prefix):
            raise InvalidArgumentError(
                f"{where}: the chat template's user turn with add_generation_prompt=True is not "
                "the start of the whole conversation's text, so the answer cannot be found")
        ids = self._ids(full, image_tokens, where)
        prompt_ids = self._ids(prefix, image_tokens, where)
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

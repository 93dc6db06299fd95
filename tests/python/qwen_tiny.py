"""A Qwen2-VL processor made offline for the tests (no downloads): the running transformers
generation's slow image processor, a character-level tokenizer holding Qwen's special tokens
(built from the texts it must encode), and a small Qwen-style chat template.

Used by test_hf_qwen_vl_labels.py and test_hf_qwen_vl_train.py.
"""
import json

from conftest import SAMPLE_DOCS

MIN_PIXELS = 56 * 56
MAX_PIXELS = 28 * 28 * 16  # at most 16 image tokens a page: tests take seconds
PROMPT = "Read the total."
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
           "<|image_pad|>"]

# Qwen2-VL's template, cut down: a turn is <|im_start|>ROLE\nCONTENT<|im_end|>\n, an image is
# <|vision_start|><|image_pad|><|vision_end|>.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def transformers_major():
    import transformers

    return int(transformers.__version__.split(".")[0])


def documents(count, field="total"):
    """(image path, answer text) of the first `count` sample documents: the receipt's `field`
    (else its first short field), at most 16 characters."""
    out = []
    for line in (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()[:count]:
        row = json.loads(line)
        fields = json.loads(row["ground_truth"])["gt_parse"]
        text = str(fields.get(field) or next(
            str(v) for v in fields.values() if isinstance(v, (str, int, float))))
        out.append((SAMPLE_DOCS / row["file_name"], text[:16]))
    return out


def char_tokenizer(texts):
    """A character-level PreTrainedTokenizerFast with Qwen's special tokens (pad: <|endoftext|>)
    covering every character of `texts` and of the chat template's roles."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2TokenizerFast

    vocab = {"<unk>": 0}
    for token in SPECIAL:
        vocab[token] = len(vocab)
    for ch in sorted(set("".join(texts) + "userassistantsystem\n" + PROMPT)):
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    # 4.x's Qwen2VLProcessor insists on a Qwen2 tokenizer class (5.x accepts any fast one).
    cls = PreTrainedTokenizerFast if transformers_major() >= 5 else Qwen2TokenizerFast
    return cls(tokenizer_object=core, unk_token="<unk>", bos_token=None,
               pad_token="<|endoftext|>", eos_token="<|im_end|>")


def processor(texts, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS):
    """The Qwen2VLProcessor a user would hold: slow image processor of the running generation
    (4.x Qwen2VLImageProcessor, 5.x Qwen2VLImageProcessorPil), the tokenizer above, the
    template above."""
    import transformers
    from transformers import Qwen2VLProcessor

    if transformers_major() >= 5:
        image_processor = transformers.Qwen2VLImageProcessorPil(min_pixels=min_pixels,
                                                                max_pixels=max_pixels)
    else:
        image_processor = transformers.Qwen2VLImageProcessor(min_pixels=min_pixels,
                                                             max_pixels=max_pixels)
    tokenizer = char_tokenizer(texts)
    if transformers_major() >= 5:
        from transformers import Qwen2VLVideoProcessor  # required by the processor, unused

        return Qwen2VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                video_processor=Qwen2VLVideoProcessor(),
                                chat_template=CHAT_TEMPLATE)
    return _images_only_class()(image_processor, tokenizer, CHAT_TEMPLATE)


def _images_only_class():
    """4.57's Qwen2VLProcessor, without its video processor (which needs torchvision, absent
    from .venv/train): the same __call__ and apply_chat_template, made without one."""
    from transformers import ProcessorMixin, Qwen2VLProcessor

    class ImagesOnlyQwen2VLProcessor(Qwen2VLProcessor):
        attributes = ["image_processor", "tokenizer"]

        def __init__(self, image_processor, tokenizer, chat_template):
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
            self.image_token = "<|image_pad|>"
            self.video_token = "<|video_pad|>"
            self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
            self.video_token_id = None

    return ImagesOnlyQwen2VLProcessor



def messages(prompt, answer):
    """The conversation a user would give apply_chat_template for one page."""
    user = [{"type": "image"}] + ([{"type": "text", "text": prompt}] if prompt else [])
    return [{"role": "user", "content": user},
            {"role": "assistant", "content": [{"type": "text", "text": answer}]}]

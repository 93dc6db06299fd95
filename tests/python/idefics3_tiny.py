"""An Idefics3 processor and model made offline for the tests (no downloads): the running
transformers generation's PIL image processor with small tiles, a character-level tokenizer
holding Idefics3's special tokens (built from the texts it must encode), SmolVLM's chat template,
and a tiny random Idefics3ForConditionalGeneration whose vision tower takes those tiles.

Used by test_hf_idefics3_labels.py and test_hf_idefics3_train.py.
"""
import qwen_tiny

LONGEST_EDGE = 112  # pages are resized to at most 112 pixels a side ...
TILE = 56  # ... and cut into 56-pixel tiles: up to 2 x 2 tiles plus the global image
PATCH = 14
SCALE_FACTOR = 2
IMAGE_SEQ_LEN = (TILE // PATCH) ** 2 // SCALE_FACTOR ** 2  # <image> tokens per tile: 4
PROMPT = "Read the total."
SPECIAL = (["<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>",
            "<image>", "<global-img>"] +
           [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)])

# SmolVLM / SmolDocling's template: "<|im_start|>User:<image>PROMPT<end_of_utterance>\n
# Assistant: ANSWER<end_of_utterance>\n", the generation prompt "Assistant:".
CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}")

documents = qwen_tiny.documents
transformers_major = qwen_tiny.transformers_major


def char_tokenizer(texts):
    """A character-level PreTrainedTokenizerFast with Idefics3's special tokens (pad:
    <|endoftext|>) covering every character of `texts` and of the template's roles."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0}
    for token in SPECIAL:
        vocab[token] = len(vocab)
    for ch in sorted(set("".join(texts) + "UserAssistant: \n" + PROMPT)):
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    return PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", bos_token=None,
                                   pad_token="<|endoftext|>", eos_token="<end_of_utterance>")


def image_processor():
    """The running generation's PIL Idefics3 image processor with the small tiles (4.x
    Idefics3ImageProcessor, 5.x Idefics3ImageProcessorPil), what docfeed reproduces."""
    import transformers

    cls = (transformers.Idefics3ImageProcessorPil if transformers_major() >= 5
           else transformers.Idefics3ImageProcessor)
    return cls(size={"longest_edge": LONGEST_EDGE}, max_image_size={"longest_edge": TILE})


def processor(texts):
    """The Idefics3Processor a user would hold, made of the parts above."""
    from transformers import Idefics3Processor

    return Idefics3Processor(image_processor=image_processor(), tokenizer=char_tokenizer(texts),
                             image_seq_len=IMAGE_SEQ_LEN, chat_template=CHAT_TEMPLATE)


def model(tokenizer, seed=0):
    """A tiny random Idefics3ForConditionalGeneration for `tokenizer`'s vocabulary: a one-layer
    SigLIP-style vision tower on TILE-pixel tiles of PATCH-pixel patches, pixel shuffle by
    SCALE_FACTOR (IMAGE_SEQ_LEN features a tile), a two-layer Llama."""
    import torch
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration

    torch.manual_seed(seed)
    config = Idefics3Config(
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": TILE, "patch_size": PATCH},
        text_config={"model_type": "llama", "vocab_size": len(tokenizer), "hidden_size": 64,
                     "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "max_position_embeddings": 512,
                     "pad_token_id": tokenizer.pad_token_id},
        scale_factor=SCALE_FACTOR,
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        pad_token_id=tokenizer.pad_token_id)
    return Idefics3ForConditionalGeneration(config)


def messages(prompt, answer):
    """The conversation a user would give apply_chat_template for one page."""
    return qwen_tiny.messages(prompt, answer)

"""docfeed.pack(processor=...): chat-template input_ids / attention_mask / labels for Qwen2-VL,
checked against the processor itself, and docfeed.Loader's per-batch padding of them.

Runs in both transformers environments (test_hf_* run under .venv/train, 4.57, and .venv/hf5,
5.x). The processor is made offline (qwen_tiny.py: the generation's slow Qwen2VLImageProcessor,
a character tokenizer with Qwen's special tokens, a Qwen-style chat template). The reference for
each row is what a user gets: PROC(text=[PROC.apply_chat_template(messages)], images=[page]) with
the page as `datasets` decodes it from the source dataset; docfeed's stored input_ids and
attention_mask must equal it exactly. A few seconds.
"""
import json

import pytest

import qwen_tiny

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
pytest.importorskip("transformers")
import docfeed  # noqa: E402
from docfeed import _docfeed  # noqa: E402

N_DOCS = 10
QUESTIONS = ["What is the total?", "Total?", ""]  # "" : a user turn with the page alone


def source_dataset(count=N_DOCS):
    docs = qwen_tiny.documents(count)
    ds = datasets.Dataset.from_dict({
        "image": [str(p) for p, _ in docs], "text": [t for _, t in docs],
        "question": [QUESTIONS[i % len(QUESTIONS)] for i in range(count)]})
    return ds.cast_column("image", datasets.Image())


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    source = source_dataset()
    proc = qwen_tiny.processor(list(source["text"]) + QUESTIONS)
    out = tmp_path_factory.mktemp("qwen-labels") / "ds"
    docfeed.pack(source, out, processor=proc, prompt_column="question", text_column="text",
                 preprocess="qwen2.5-vl")
    return source, proc, out


def reference(proc, prompt, answer, page):
    """input_ids and attention_mask as the user's processor gives them for one page."""
    text = proc.apply_chat_template(qwen_tiny.messages(prompt, answer), tokenize=False)
    got = proc(text=[text], images=[page], return_tensors="pt")
    return got["input_ids"][0].tolist(), got["attention_mask"][0].tolist(), got["image_grid_thw"]


def test_input_ids_equal_the_processor(setup):
    source, proc, out = setup
    rows = datasets.load_from_disk(str(out))
    assert len(rows) == N_DOCS
    image_token = proc.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    for i in range(N_DOCS):
        want_ids, want_mask, grid = reference(proc, source[i]["question"], source[i]["text"],
                                              source[i]["image"])
        assert rows[i]["input_ids"] == want_ids, i
        assert rows[i]["attention_mask"] == want_mask, i
        # The image tokens are the page's grid over merge_size**2, from the processor itself.
        assert want_ids.count(image_token) == int(grid.prod()) // 4


def test_labels_are_the_answer_and_its_end_of_turn(setup):
    source, proc, out = setup
    tok = proc.tokenizer
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    newline = tok.convert_tokens_to_ids("\n")
    rows = datasets.load_from_disk(str(out))
    for i in range(N_DOCS):
        ids, labels = rows[i]["input_ids"], rows[i]["labels"]
        answer = tok(source[i]["text"], add_special_tokens=False)["input_ids"] + [im_end]
        # The template ends the conversation with "ANSWER<|im_end|>\n": only ANSWER<|im_end|>
        # is learned; the prompt, the image tokens and the trailing newline are -100.
        assert ids[-1] == newline
        n = len(answer)
        assert labels == [-100] * (len(ids) - n - 1) + answer + [-100], i
        assert ids[-n - 1:-1] == answer


def test_manifest_records_the_pad_id_and_settings(setup):
    _, proc, out = setup
    info = _docfeed.dataset_info(str(out))
    chat = json.loads(info["chat_labels"])
    rows = datasets.load_from_disk(str(out))
    assert chat == {
        "columns": ["input_ids", "attention_mask", "labels"], "preset": "qwen2-vl",
        "pad_token_id": proc.tokenizer.pad_token_id,
        "image_token_id": proc.tokenizer.convert_tokens_to_ids("<|image_pad|>"),
        "end_token_id": proc.tokenizer.convert_tokens_to_ids("<|im_end|>"),
        "longest": max(len(r) for r in rows["input_ids"]),
        "min_pixels": qwen_tiny.MIN_PIXELS, "max_pixels": qwen_tiny.MAX_PIXELS,
        "patch_size": 14, "merge_size": 2}
    # The stored pages were resized with the processor's settings.
    stored = json.loads((out / "docfeed.json").read_text())["preprocess"]
    assert (stored["min_pixels"], stored["max_pixels"]) == (qwen_tiny.MIN_PIXELS,
                                                            qwen_tiny.MAX_PIXELS)
    assert {c[0]: c[1] for c in info["columns"]}["input_ids"] == "list<int64>"


def test_the_processor_generation_is_recorded(setup, tmp_path):
    """preprocess stores the pages of the processor's generation: 4.x Qwen2VLImageProcessor
    (4, pil), 5.x Qwen2VLImageProcessorPil (5, pil), 5.x Qwen2VLImageProcessor (5, torchvision,
    what AutoProcessor gives); docfeed.hf picks the same for its loader."""
    import docfeed.hf

    source, proc, out = setup
    major = qwen_tiny.transformers_major()
    stored = json.loads((out / "docfeed.json").read_text())["preprocess"]
    assert (stored["hf_version"], stored["backend"]) == (major, "pil")
    assert docfeed.hf.qwen_generation(proc)[:2] == (major, "pil")
    if major < 5:
        return
    from transformers import Qwen2VLImageProcessor

    proc = qwen_tiny.processor(list(source["text"]) + QUESTIONS)  # the fixture's stays as it is
    proc.image_processor = Qwen2VLImageProcessor(min_pixels=qwen_tiny.MIN_PIXELS,
                                                 max_pixels=qwen_tiny.MAX_PIXELS)
    docfeed.pack(source.select(range(2)), tmp_path / "tv", processor=proc, prompt="",
                 text_column="text", preprocess="qwen2.5-vl")
    stored = json.loads((tmp_path / "tv" / "docfeed.json").read_text())["preprocess"]
    assert (stored["hf_version"], stored["backend"]) == (5, "torchvision")
    assert docfeed.hf.qwen_generation(proc)[:2] == (5, "torchvision")
    ds = docfeed.hf.DocfeedDataset(tmp_path / "tv", preset="qwen2.5-vl")
    batch = next(iter(ds.loader(processor=proc, batch_size=2, seed=0)))
    assert tuple(batch["input_ids"].shape)[0] == 2


def test_fixed_prompt_and_original_pages(tmp_path):
    """prompt= for every row, pages stored as they are (no preprocess): the same ids."""
    source = source_dataset(4).remove_columns(["question"])
    proc = qwen_tiny.processor(list(source["text"]))
    docfeed.pack(source, tmp_path / "ds", processor=proc, prompt=qwen_tiny.PROMPT,
                 text_column="text")
    rows = datasets.load_from_disk(str(tmp_path / "ds"))
    for i in range(4):
        want_ids, _, _ = reference(proc, qwen_tiny.PROMPT, source[i]["text"], source[i]["image"])
        assert rows[i]["input_ids"] == want_ids


def test_parts_merge_into_the_whole_pack(setup, tmp_path):
    """A split pack (part=(I, N)) with processor=: every part records the chat_labels of the whole
    listing, so docfeed.merge joins them into what one pack gives."""
    source, proc, out = setup
    args = dict(processor=proc, prompt_column="question", text_column="text",
                preprocess="qwen2.5-vl")
    parts = [tmp_path / f"part{i}" for i in range(2)]
    for i, part in enumerate(parts):
        docfeed.pack(source, part, part=(i, 2), **args)
    docfeed.merge(parts, tmp_path / "merged")
    whole = datasets.load_from_disk(str(out))
    merged = datasets.load_from_disk(str(tmp_path / "merged"))
    for name in ("input_ids", "attention_mask", "labels"):
        assert merged[name] == whole[name]
    assert (json.loads(_docfeed.dataset_info(str(tmp_path / "merged"))["chat_labels"]) ==
            json.loads(_docfeed.dataset_info(str(out))["chat_labels"]))


def test_loader_pads_each_batch_to_its_longest_row(setup):
    source, proc, out = setup
    rows = datasets.load_from_disk(str(out))
    pad = proc.tokenizer.pad_token_id
    image_token = proc.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    loader = docfeed.Loader(out, batch_size=3, preset="qwen2.5-vl", min_pixels=qwen_tiny.MIN_PIXELS,
                            max_pixels=qwen_tiny.MAX_PIXELS, seed=3, drop_last=False,
                            hf_version=qwen_tiny.transformers_major())
    seen, widths = [], set()
    for batch in loader:
        ids = [int(i) for i in batch.sample_ids]
        seen += ids
        longest = max(len(rows[i]["input_ids"]) for i in ids)
        widths.add(longest)
        for name in ("input_ids", "attention_mask", "labels"):
            assert batch[name].dtype == torch.int64
            assert tuple(batch[name].shape) == (len(ids), longest), name
        for j, i in enumerate(ids):
            n = len(rows[i]["input_ids"])
            assert batch["input_ids"][j].tolist() == rows[i]["input_ids"] + [pad] * (longest - n)
            assert batch["attention_mask"][j].tolist() == [1] * n + [0] * (longest - n)
            assert batch["labels"][j].tolist() == rows[i]["labels"] + [-100] * (longest - n)
            # The row's image tokens are what its page in this batch needs.
            grid = batch["image_grid_thw"][j]
            assert rows[i]["input_ids"].count(image_token) == int(grid.prod()) // 4
    assert sorted(seen) == list(range(N_DOCS))
    assert len(widths) > 1  # the batches really differ in length
    # label_column="-": no token columns.
    plain = docfeed.Loader(out, batch_size=3, preset="qwen2.5-vl", label_column="-",
                           min_pixels=qwen_tiny.MIN_PIXELS, max_pixels=qwen_tiny.MAX_PIXELS,
                           hf_version=qwen_tiny.transformers_major())
    assert not {"input_ids", "attention_mask", "labels"} & set(next(iter(plain)))


def test_bad_rows_and_arguments_are_refused(tmp_path):
    source = source_dataset(3)
    proc = qwen_tiny.processor(list(source["text"]) + QUESTIONS)

    def pack(ds, **kwargs):
        args = dict(processor=proc, prompt_column="question", text_column="text",
                    preprocess="qwen2.5-vl")
        args.update(kwargs)
        docfeed.pack(ds, tmp_path / "out", **args)

    with pytest.raises(docfeed.InvalidArgumentError, match=r"row 0: no column 'answer'"):
        pack(source, text_column="answer")
    with pytest.raises(docfeed.InvalidArgumentError, match=r"row 0: no column 'q'"):
        pack(source, prompt_column="q")
    rows = [dict(source[i]) for i in range(3)]
    rows[2]["text"] = 7
    with pytest.raises(docfeed.InvalidArgumentError, match=r"row 2: column 'text' is int"):
        pack(rows)
    with pytest.raises(docfeed.InvalidArgumentError, match="one of prompt= .* or prompt_column"):
        pack(source, prompt="x")
    with pytest.raises(docfeed.InvalidArgumentError, match="not both"):
        pack(source, tokenizer=proc.tokenizer)
    with pytest.raises(docfeed.InvalidArgumentError, match="preprocess='donut'"):
        pack(source, preprocess="donut", size=(64, 48))
    with pytest.raises(docfeed.InvalidArgumentError, match="in-memory rows"):
        docfeed.pack(str(qwen_tiny.SAMPLE_DOCS), tmp_path / "out", processor=proc, prompt="x")
    with pytest.raises(docfeed.InvalidArgumentError, match="has a column 'labels'"):
        pack(source.add_column("labels", ["a", "b", "c"]))
    bad = [dict(rows[0]), {"image": {"bytes": b"not an image", "path": "x.png"}, "text": "a",
                           "question": "q"}]
    bad[0]["text"] = "ok"
    with pytest.raises(docfeed.DataError, match="row 1: image"):
        pack(bad)
    assert not (tmp_path / "out").exists()  # nothing half-written

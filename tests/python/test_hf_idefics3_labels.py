"""docfeed.pack(processor=...) with an Idefics3 processor: chat-template input_ids /
attention_mask / labels checked against the processor itself, and docfeed.Loader(preset=
"idefics3")'s batches of them beside the tiles.

Runs in both transformers environments (test_hf_* run under .venv/train, 4.57, and .venv/hf5,
5.x). The processor is made offline (idefics3_tiny.py: the generation's PIL Idefics3 image
processor with 56-pixel tiles, a character tokenizer with Idefics3's special tokens, SmolVLM's
chat template). The reference for each row is what a user gets:
PROC(text=[PROC.apply_chat_template(messages)], images=[[page]]) with the page as `datasets`
decodes it; docfeed's stored input_ids and attention_mask must equal it exactly. Seconds.
"""
import json

import numpy as np
import pytest

import idefics3_tiny

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
pytest.importorskip("transformers")
import docfeed  # noqa: E402
from docfeed import _docfeed  # noqa: E402

N_DOCS = 10
QUESTIONS = ["What is the total?", "Total?", ""]  # "" : a user turn with the page alone


def source_dataset(count=N_DOCS):
    docs = idefics3_tiny.documents(count)
    ds = datasets.Dataset.from_dict({
        "image": [str(p) for p, _ in docs], "text": [t for _, t in docs],
        "question": [QUESTIONS[i % len(QUESTIONS)] for i in range(count)]})
    return ds.cast_column("image", datasets.Image())


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    source = source_dataset()
    proc = idefics3_tiny.processor(list(source["text"]) + QUESTIONS)
    out = tmp_path_factory.mktemp("idefics3-labels") / "ds"
    docfeed.pack(source, out, processor=proc, prompt_column="question", text_column="text")
    return source, proc, out


def as_processor_takes_it(image):
    """4.x's Idefics3ImageProcessor raises on modes other than RGB / RGBA (L, P, LA): the user
    converts (as test_hf_idefics3_loader.py does); the size, all the tokens depend on, stays."""
    if idefics3_tiny.transformers_major() < 5 and image.mode not in ("RGB", "RGBA"):
        return image.convert("RGB")
    return image


def reference(proc, prompt, answer, page):
    """input_ids, attention_mask, rows and cols as the user's processor gives them."""
    text = proc.apply_chat_template(idefics3_tiny.messages(prompt, answer), tokenize=False)
    page = as_processor_takes_it(page)
    got = proc(text=[text], images=[[page]], return_tensors="pt")
    grid = proc.image_processor([[page]], return_row_col_info=True)  # the processor drops them
    return (got["input_ids"][0].tolist(), got["attention_mask"][0].tolist(), grid["rows"][0][0],
            grid["cols"][0][0])


def test_input_ids_equal_the_processor(setup):
    source, proc, out = setup
    rows = datasets.load_from_disk(str(out))
    assert len(rows) == N_DOCS
    image_token = proc.tokenizer.convert_tokens_to_ids("<image>")
    grids = set()
    for i in range(N_DOCS):
        want_ids, want_mask, r, c = reference(proc, source[i]["question"], source[i]["text"],
                                              source[i]["image"])
        assert rows[i]["input_ids"] == want_ids, i
        assert rows[i]["attention_mask"] == want_mask, i
        # A page of r x c tiles (0 x 0: one) plus its global image, image_seq_len tokens each.
        tiles = r * c + 1 if r else 1
        assert want_ids.count(image_token) == tiles * idefics3_tiny.IMAGE_SEQ_LEN
        grids.add((r, c))
    assert len(grids) > 1  # the sample pages give different grids


def test_labels_are_the_answer_and_its_end_of_turn(setup):
    source, proc, out = setup
    tok = proc.tokenizer
    end = tok.convert_tokens_to_ids("<end_of_utterance>")
    newline = tok.convert_tokens_to_ids("\n")
    rows = datasets.load_from_disk(str(out))
    for i in range(N_DOCS):
        ids, labels = rows[i]["input_ids"], rows[i]["labels"]
        # The template ends with "Assistant: ANSWER<end_of_utterance>\n" after the generation
        # prompt "Assistant:": " ANSWER<end_of_utterance>" is learned, the rest is -100.
        answer = tok(" " + source[i]["text"], add_special_tokens=False)["input_ids"] + [end]
        assert ids[-1] == newline
        n = len(answer)
        assert labels == [-100] * (len(ids) - n - 1) + answer + [-100], i
        assert ids[-n - 1:-1] == answer


def test_manifest_records_the_family_and_settings(setup):
    _, proc, out = setup
    chat = json.loads(_docfeed.dataset_info(str(out))["chat_labels"])
    rows = datasets.load_from_disk(str(out))
    assert chat == {
        "columns": ["input_ids", "attention_mask", "labels"], "preset": "idefics3",
        "pad_token_id": proc.tokenizer.pad_token_id,
        "image_token_id": proc.tokenizer.convert_tokens_to_ids("<image>"),
        "end_token_id": proc.tokenizer.convert_tokens_to_ids("<end_of_utterance>"),
        "longest": max(len(r) for r in rows["input_ids"]),
        "longest_edge": idefics3_tiny.LONGEST_EDGE, "max_image_size": idefics3_tiny.TILE,
        "do_image_splitting": 1, "image_seq_len": idefics3_tiny.IMAGE_SEQ_LEN}


def make_loader(out, **kwargs):
    args = dict(batch_size=3, preset="idefics3", longest_edge=idefics3_tiny.LONGEST_EDGE,
                max_image_size=idefics3_tiny.TILE, seed=3, drop_last=False,
                hf_version=idefics3_tiny.transformers_major())
    args.update(kwargs)
    return docfeed.Loader(out, **args)


def test_loader_batches_tokens_beside_the_tiles(setup):
    """Each batch's input_ids are the stored rows padded to the batch's longest, and each row
    holds image_seq_len <image> tokens for every real tile of its page in the same batch (what
    Idefics3ForConditionalGeneration requires); the tiles equal the processor's."""
    source, proc, out = setup
    rows = datasets.load_from_disk(str(out))
    pad = proc.tokenizer.pad_token_id
    image_token = proc.tokenizer.convert_tokens_to_ids("<image>")
    seen, widths = [], set()
    for batch in make_loader(out):
        ids = [int(i) for i in batch.sample_ids]
        seen += ids
        longest = max(len(rows[i]["input_ids"]) for i in ids)
        widths.add(longest)
        for name in ("input_ids", "attention_mask", "labels"):
            assert batch[name].dtype == torch.int64
            assert tuple(batch[name].shape) == (len(ids), longest), name
        images = [[as_processor_takes_it(rows[i]["image"])] for i in ids]
        want = proc.image_processor(images, return_tensors="np", return_row_col_info=True)
        pv = np.asarray(want["pixel_values"], dtype=np.float32)
        assert np.array_equal(batch["pixel_values"].numpy().view(np.uint32), pv.view(np.uint32))
        for j, i in enumerate(ids):
            n = len(rows[i]["input_ids"])
            assert batch["input_ids"][j].tolist() == rows[i]["input_ids"] + [pad] * (longest - n)
            assert batch["attention_mask"][j].tolist() == [1] * n + [0] * (longest - n)
            assert batch["labels"][j].tolist() == rows[i]["labels"] + [-100] * (longest - n)
            real_tiles = int(batch["pixel_attention_mask"][j].flatten(1).any(1).sum())
            assert rows[i]["input_ids"].count(image_token) == (
                real_tiles * idefics3_tiny.IMAGE_SEQ_LEN)
    assert sorted(seen) == list(range(N_DOCS))
    assert len(widths) > 1  # the batches really differ in length


def test_loader_refuses_other_settings_and_presets(setup):
    _, _, out = setup
    with pytest.raises(docfeed.InvalidArgumentError, match="longest_edge 112 .this loader: 224"):
        make_loader(out, longest_edge=224)
    with pytest.raises(docfeed.InvalidArgumentError, match="image tokens of the idefics3"):
        docfeed.Loader(out, batch_size=2, preset="qwen2.5-vl")
    # label_column="-": the tiles alone, no token columns.
    plain = make_loader(out, label_column="-")
    assert not {"input_ids", "attention_mask", "labels"} & set(next(iter(plain)))


def test_page_size_and_grid_follow_pillow_and_the_processor(tmp_path):
    """_docfeed.page_size (the header, after EXIF orientation) against Pillow's
    exif_transpose, and _docfeed.page_grid against the image processor's rows / cols, on the
    sample pages and on a JPEG whose EXIF turns it a quarter."""
    from PIL import Image, ImageOps

    proc = idefics3_tiny.image_processor()
    pages = [p for p, _ in idefics3_tiny.documents(N_DOCS)]
    turned = tmp_path / "turned.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    Image.new("RGB", (90, 40), (200, 10, 10)).save(turned, exif=exif)
    pages.append(turned)
    for path in pages:
        data = path.read_bytes()
        with Image.open(path) as image:
            shown = ImageOps.exif_transpose(image)
            assert _docfeed.page_size(data) == (shown.height, shown.width), path
            want = proc([[shown.convert("RGB")]], return_row_col_info=True)
        got = _docfeed.page_grid("idefics3", shown.height, shown.width,
                                 longest_edge=idefics3_tiny.LONGEST_EDGE,
                                 max_image_size=idefics3_tiny.TILE)
        assert got == (1, want["rows"][0][0], want["cols"][0][0]), path
    assert _docfeed.page_size(turned.read_bytes()) == (90, 40)
    with pytest.raises(docfeed.InvalidArgumentError, match="no grid of image tokens"):
        _docfeed.page_grid("donut", 100, 100)
    with pytest.raises(docfeed.Error):
        _docfeed.page_size(b"not an image")


def test_pack_preprocess_idefics3_with_the_processor(setup, tmp_path):
    """docfeed.pack(processor=..., preprocess="idefics3") stores the pages prepared with the
    processor's settings and generation; the token columns and the loaded tiles equal the
    processor's for the original pages."""
    source, proc, _ = setup
    out = tmp_path / "prepared"
    docfeed.pack(source, out, processor=proc, prompt_column="question", text_column="text",
                 preprocess="idefics3")
    version = idefics3_tiny.transformers_major()
    assert _docfeed.dataset_info(str(out))["preprocess"] == {
        "preset": "idefics3", "height": 0, "width": 0, "align_long_axis": False,
        "hf_version": version, "backend": "pil", "longest_edge": idefics3_tiny.LONGEST_EDGE,
        "max_image_size": idefics3_tiny.TILE, "do_image_splitting": True}
    rows = datasets.load_from_disk(str(out))
    for i in range(N_DOCS):
        want_ids, _, _, _ = reference(proc, source[i]["question"], source[i]["text"],
                                      source[i]["image"])
        assert rows[i]["input_ids"] == want_ids, i
    image_token = proc.tokenizer.convert_tokens_to_ids("<image>")
    for batch in make_loader(out):
        ids = [int(i) for i in batch.sample_ids]
        images = [[as_processor_takes_it(source[i]["image"])] for i in ids]
        want = proc.image_processor(images, return_tensors="np", return_row_col_info=True)
        pv = np.asarray(want["pixel_values"], dtype=np.float32)
        assert np.array_equal(batch["pixel_values"].numpy().view(np.uint32), pv.view(np.uint32))
        for j, i in enumerate(ids):
            real_tiles = int(batch["pixel_attention_mask"][j].flatten(1).any(1).sum())
            assert rows[i]["input_ids"].count(image_token) == (
                real_tiles * idefics3_tiny.IMAGE_SEQ_LEN)


def test_bad_arguments_are_refused(tmp_path):
    source = source_dataset(2)
    proc = idefics3_tiny.processor(list(source["text"]) + QUESTIONS)
    with pytest.raises(docfeed.InvalidArgumentError, match="Idefics3 processor.*preprocess"):
        docfeed.pack(source, tmp_path / "out", processor=proc, prompt="x", text_column="text",
                     preprocess="qwen2.5-vl")
    proc.image_processor = object()
    with pytest.raises(docfeed.InvalidArgumentError, match="image_processor is a object"):
        docfeed.pack(source, tmp_path / "out", processor=proc, prompt="x", text_column="text")
    assert not (tmp_path / "out").exists()

"""`make demo`'s training comparison (scripts/demo_train.py --quick), end to end at a tiny size:
synth -> tokenizer -> docfeed pack --tokenizer -> the recipe's DonutProcessor map + save_to_disk
-> the Hugging Face Seq2SeqTrainer twice (the recipe's DataLoader, then docfeed.hf) -> report.

Checks, against the real libraries: both runs trained the same number of samples with finite
losses; docfeed's labels equal the ones the recipe's tokenizer (transformers 4.57.6
XLMRobertaTokenizerFast over the same SentencePiece model) gives; the recipe's dataset is the
float32 nested-list layout of the recipe; `docfeed doctor` ran on the recipe's dataset and its
estimate is in the report; the report files exist and the PNG is a PNG.
Runs in .venv/train (`make test-python`); 41-53 s on the shared 2-core machine under load 9
(the quick demo itself ~26 s, doctor ~11 s of it; the rest is imports).
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "demo_train.py"), "--quick",
                           "--out", str(out)], capture_output=True, text=True,
                          env=dict(os.environ, TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1",
                                   HF_DATASETS_OFFLINE="1"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return out, proc.stdout, json.loads((out / "results.json").read_text())


def test_both_runs_train_the_same_samples_with_finite_losses(demo):
    _, _, results = demo
    runs = results["runs"]
    assert [r["name"] for r in runs] == ["recipe (workers=0)", "docfeed"]
    steps, batch = results["meta"]["steps"], results["meta"]["batch"]
    for r in runs:
        assert r["steps"] == steps
        assert r["samples"] == steps * batch
        assert len(r["losses"]) == steps
        assert all(0 < x < 100 for x in r["losses"]), r["losses"]  # finite, not NaN
        assert r["samples_per_s"] > 0 and 0 <= r["wait_fraction"] <= 1


def test_labels_equal_the_recipe_tokenizers(demo):
    out, _, results = demo
    import datasets
    from transformers import XLMRobertaTokenizerFast

    packed = datasets.load_from_disk(str(out / "invoices.docfeed"))
    recipe = datasets.load_from_disk(str(out / "recipe-64x48.hf"))
    assert packed.num_rows == recipe.num_rows == results["meta"]["n"]
    assert packed["labels"] == recipe["labels"]
    assert "16/16" in results["meta"]["labels_match"]
    # Independently of the demo's own code: the saved docfeed tokenizer, loaded by transformers,
    # gives the same ids for the target sequences.
    tok = XLMRobertaTokenizerFast.from_pretrained(str(out / "invoices.docfeed" / "tokenizer"))
    for text, labels in zip(packed["target_sequence"][:4], packed["labels"][:4]):
        ids = tok(text, add_special_tokens=False)["input_ids"][:512]
        assert [i for i in labels if i != -100] == ids
    # The recipe's layout: float32 nested lists, (3, H, W) per sample, values in [-1, 1].
    feature = recipe.features["pixel_values"]
    assert str(feature) == "List(List(List(Value('float32'))))"
    pixels = recipe[0]["pixel_values"]
    assert (len(pixels), len(pixels[0]), len(pixels[0][0])) == (3, 64, 48)
    flat = [v for plane in pixels for row in plane for v in row]
    assert min(flat) >= -1.0 and max(flat) <= 1.0


def test_report_files(demo):
    out, stdout, results = demo
    report = (out / "report.md").read_text()
    assert "| recipe (workers=0) |" in report and "| docfeed |" in report
    # docfeed doctor ran (on the quick run's small recipe dataset) and its estimate is reported.
    doctor = results["doctor"]
    assert doctor is not None, results["doctor_error"]
    assert doctor["kind"] == "save_to_disk" and doctor["assume_samples"] == 16000
    assert doctor["epochs"] == 6 and doctor["image_size"] == [64, 48]
    assert "float32-nested-lists" in {p["id"] for p in doctor["pathologies"]}
    for pipe in doctor["pipelines"]:
        assert f"| {pipe['name']} |" in report
    assert (out / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "docfeed verify" in stdout and ": OK" in stdout

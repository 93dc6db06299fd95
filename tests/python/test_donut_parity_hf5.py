"""`docfeed preprocess --preset donut --hf-version 5` against the real transformers 5 processors.

Run with the transformers-5 environment: `.venv/hf5/bin/python -m pytest
tests/python/test_donut_parity_hf5.py` (DOCFEED_BUILD_DIR as for the other CLI tests). The module
is skipped, saying so, when transformers 5 is not importable; the torchvision cases are skipped
when torchvision is not (the PIL cases still run).

References, computed in this process from `PIL.Image.open(path)` as a fine-tuning script calls
them, with do_convert_rgb=True (the 5.x default None only accepts RGB images: an L, P, LA or RGBA
page reaches normalize with 1, 2 or 4 channels and raises; for RGB pages True and None are the
same):
  * `--backend pil`:          DonutImageProcessorPil,
  * `--backend torchvision`:  DonutImageProcessor (TorchvisionBackend) on the CPU.
Compared bit for bit on every sample document and every generated case of
test_donut_parity.py (the same list: tiny, huge, very tall/wide, landscape, 1/L/LA/P/P+tRNS/RGB/
RGBA, align_long_axis, square and landscape targets): the resized stage (do_pad/rescale/normalize
off), the padded stage (centred, as 5.x always pads) and pixel_values (float32, compared as bits).
"""
import numpy as np
import pytest
from PIL import Image

from conftest import SAMPLE_DOCS, run_docfeed
from test_donut_parity import FULL_PAGE_EXTRA, GENERATED, SAMPLES, STAGES, make_image

transformers = pytest.importorskip("transformers")
if int(transformers.__version__.split(".")[0]) < 5:
    pytest.skip(f"transformers {transformers.__version__} is not 5.x (run this module with "
                ".venv/hf5/bin/python)", allow_module_level=True)

from transformers import DonutImageProcessorPil  # noqa: E402

try:
    import torch  # noqa: E402
    import torchvision  # noqa: E402,F401
    from transformers import DonutImageProcessor as DonutImageProcessorTorchvision  # noqa: E402

    HAVE_TORCHVISION = True
except ImportError:
    HAVE_TORCHVISION = False

BACKENDS = ("pil", "torchvision")


def processor(backend, **init):
    if backend == "pil":
        return DonutImageProcessorPil(**init)
    if not HAVE_TORCHVISION:
        pytest.skip("torchvision is not installed: the torchvision backend cannot run")
    torch.set_num_threads(1)
    proc = DonutImageProcessorTorchvision(**init)
    assert proc.backend == "torchvision"
    return proc


def reference(backend, image, hw, align, stage):
    """The processor's output for one stage: HWC uint8 for resized/padded, CHW float32 else."""
    h, w = (int(v) for v in hw.split("x"))
    init = {"size": {"height": h, "width": w}, "do_align_long_axis": align}
    if stage in ("resized", "padded"):
        init.update(do_rescale=False, do_normalize=False)
    if stage == "resized":
        init["do_pad"] = False
    proc = processor(backend, **init)
    with Image.open(image) as img:
        out = proc(img, do_convert_rgb=True)["pixel_values"][0]
    out = np.asarray(out.numpy() if hasattr(out, "numpy") else out)
    return out if stage == "normalized" else out.transpose(1, 2, 0)


def all_cases():
    """(id, image (path or generated name), "HxW", align, stage)."""
    cases = []
    for rel in SAMPLES:
        for stage in ("padded", "normalized"):
            cases.append((f"{rel}@1553x1200-{stage}", rel, "1553x1200", False, stage))
    for rel in FULL_PAGE_EXTRA:
        cases.append((f"{rel}@1553x1200-resized", rel, "1553x1200", False, "resized"))
        cases.append((f"{rel}@1280x960-normalized", rel, "1280x960", False, "normalized"))
    for name, _, _, _, hw, align in GENERATED:
        for stage in STAGES:
            cases.append((f"{name}-{stage}", ("gen", name), hw, align, stage))
    return cases


CASES = {c[0]: c for c in all_cases()}


@pytest.fixture(scope="module")
def gen_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("donut5")
    for name, w, h, mode, _, _ in GENERATED:
        make_image(out / f"{name}.png", w, h, mode, seed=w * 7 + h)
    return out


def image_path(source, gen_dir):
    return gen_dir / f"{source[1]}.png" if isinstance(source, tuple) else SAMPLE_DOCS / source


def docfeed_stage(image, hw, stage, out, *extra):
    run_docfeed("preprocess", image, "--preset", "donut", "--size", hw, "--stage", stage,
                "-o", out, *extra)
    return np.load(out)


def compare(got, want, stage, what):
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    if stage == "normalized":  # bit for bit, not merely ==
        got, want = got.view(np.uint32), want.view(np.uint32)
    if not np.array_equal(got, want):
        diff = np.argwhere(got != want)
        pytest.fail(f"{what}: {len(diff)} of {got.size} elements differ, first at "
                    f"{diff[0].tolist()}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case_id", list(CASES))
def test_matches_transformers5(backend, case_id, gen_dir, tmp_path):
    _, source, hw, align, stage = CASES[case_id]
    image = image_path(source, gen_dir)
    want = reference(backend, image, hw, align, stage)
    extra = ["--hf-version", "5", "--backend", backend] + (["--align-long-axis"] if align else [])
    got = docfeed_stage(image, hw, stage, tmp_path / "out.npy", *extra)
    compare(got, want, stage, f"{case_id} ({backend})")


def test_generations_differ_where_the_thumbnail_runs(tmp_path):
    """The choice is not a no-op: on a page the thumbnail shrinks, 4.x (BICUBIC, reducing_gap 2)
    and 5.x (BILINEAR) differ, and so do Pillow's and torch's integer arithmetic."""
    image = SAMPLE_DOCS / "sroie" / "023.jpg"
    outs = {}
    for name, extra in (("4", []), ("5-pil", ["--hf-version", "5"]),
                        ("5-tv", ["--hf-version", "5", "--backend", "torchvision"])):
        outs[name] = docfeed_stage(image, "1553x1200", "resized", tmp_path / f"{name}.npy",
                                   *extra)
    assert outs["4"].shape == outs["5-pil"].shape == outs["5-tv"].shape
    assert (outs["4"] != outs["5-pil"]).mean() > 0.01
    assert (outs["5-pil"] != outs["5-tv"]).any()


def test_rejects_bad_generation_arguments(tmp_path):
    image = SAMPLE_DOCS / "sroie" / "000.jpg"
    for args, named in ((["--hf-version", "6"], "--hf-version"),
                        (["--hf-version", "x"], "--hf-version"),
                        (["--backend", "opencv"], "--backend"),
                        (["--backend", "torchvision"], "--backend")):  # needs --hf-version 5
        proc = run_docfeed("preprocess", image, "--preset", "donut", *args, "-o",
                           tmp_path / "x.npy", check=False)
        assert proc.returncode == 2 and named in proc.stderr, (args, proc.stderr)


def test_normalize_table_matches_torch():
    """The torchvision backend's fused rescale/normalize (not numpy's two steps), for the default
    and for ImageNet statistics, through the extension's table (needs docfeed installed)."""
    if not HAVE_TORCHVISION:
        pytest.skip("torchvision is not installed")
    docfeed_ext = pytest.importorskip("docfeed._docfeed")
    values = torch.arange(256, dtype=torch.uint8).view(1, 1, 1, 256).expand(1, 3, 1, 256)
    for mean, std in (((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
                      ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))):
        proc = processor("torchvision", image_mean=list(mean), image_std=list(std))
        want = proc.rescale_and_normalize(values.contiguous(), True, 1 / 255, True, tuple(mean),
                                          tuple(std)).reshape(3, 256).numpy()
        got = np.asarray(docfeed_ext.normalize_table(mean=list(mean), std=list(std),
                                                     hf_version=5, backend="torchvision"),
                         dtype=np.float32).reshape(3, 256)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (mean, std)


def test_docfeed_hf_recognizes_the_real_processors():
    """docfeed.hf's automatic choice on the real 5.x classes (needs docfeed installed)."""
    hf = pytest.importorskip("docfeed.hf")
    assert hf.processor_generation(DonutImageProcessorPil())[:2] == (5, "pil")
    if HAVE_TORCHVISION:
        assert hf.processor_generation(DonutImageProcessorTorchvision())[:2] == (5, "torchvision")
        assert hf.processor_generation()[:2] == (5, "torchvision")

"""What the per-model preprocessing benchmarks (qwen_vl_bench.py, nougat_bench.py,
idefics3_bench.py, pix2struct_bench.py) share: the Python processors timed in a child process on one thread, and
`docfeed preprocess --repeat N`'s own CPU time per image."""
import json
import os
import pathlib
import re
import subprocess
import tempfile


def one_thread_env():
    """The environment with OpenMP, MKL and OpenBLAS limited to one thread."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = "1"
    return env


def python_times(python, timer, kind, pages, repeat, *extra):
    """Runs the `timer` script in `python` on one thread (argv: kind, pages as JSON, repeat,
    extra...) and returns the JSON object its last line prints."""
    out = subprocess.run([python, "-c", timer, kind, json.dumps(pages), str(repeat),
                          *map(str, extra)], capture_output=True, text=True, env=one_thread_env())
    if out.returncode != 0:
        raise RuntimeError(f"{kind} timer failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def cpu_seconds_per_image(text):
    """The mean CPU time per image that `docfeed preprocess --repeat` and donut_stages_bench
    print ("cpu per image (mean of N): X ms"), in seconds."""
    return float(re.search(r"cpu per image \(mean of \d+\): ([0-9.]+) ms", text)[1]) / 1e3


def run_preprocess(binary, page, repeat, out_npy, *args):
    """`BINARY preprocess PAGE ARGS --repeat N -o OUT_NPY`: the CPU seconds per image it reports."""
    out = subprocess.run([str(binary), "preprocess", str(page), *map(str, args), "--repeat",
                          str(repeat), "-o", str(out_npy)], capture_output=True, text=True,
                         check=True)
    return cpu_seconds_per_image(out.stderr)


def docfeed_preprocess(build, page, repeat, *args):
    """`docfeed preprocess PAGE ARGS --repeat N` of the build: the CPU seconds per image it
    reports, and the shape of the array it wrote."""
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        seconds = run_preprocess(pathlib.Path(build) / "bin" / "docfeed", page, repeat,
                                 f"{tmp}/out.npy", *args)
        shape = np.load(f"{tmp}/out.npy").shape
    return seconds, shape

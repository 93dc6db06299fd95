"""docfeed.ray.pack on a two-node Ray cluster (ray.cluster_utils.Cluster, 1 CPU per node, on
127.0.0.1, started here): the parts go to both nodes and the merged dataset equals one
`docfeed pack` of the same source (test_pack_parts.assert_same_dataset). A driver killed
(SIGKILL) while it merges leaves nothing valid-looking at `out` (absent, or complete and
verified), and the rerun keeps every complete part and finishes the merge. .venv/train only.
"""
import faulthandler
import os
import subprocess
import sys
import textwrap

import datasets
import pytest

# Ray turns 127.0.0.1 in an address into the host's own IP unless its loopback mode is on (the
# variable's name is historical; ray reads it when imported, and the nodes and workers it
# starts inherit it): everything here stays on 127.0.0.1.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: E402

import docfeed.ray  # noqa: E402
from conftest import SAMPLE_DOCS, run_docfeed  # noqa: E402
from test_pack_parts import assert_same_dataset  # noqa: E402


@ray.remote(num_cpus=1)
def _node_id():
    return ray.get_runtime_context().get_node_id()


@pytest.fixture(scope="module")
def cluster():
    # A Ray that cannot start or connect retries for minutes: end the run instead of hanging.
    faulthandler.dump_traceback_later(240, exit=True)
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False})
    cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    # A task pinned to each node first, so that both have a worker running before the parts are
    # submitted: under load a node still starting its first worker was passed over and every
    # part ran on the other one.
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    assert len(nodes) == 2, nodes
    ran_on = ray.get([_node_id.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        node, soft=False)).remote() for node in nodes])
    assert sorted(ran_on) == nodes
    yield cluster
    ray.shutdown()
    cluster.shutdown()
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "sample-docs"
    run_docfeed("pack", SAMPLE_DOCS, "-o", out, "--threads", "2")
    return out


def test_two_nodes_pack_the_same_dataset(cluster, tmp_path, whole):
    report = docfeed.ray.pack(SAMPLE_DOCS, tmp_path / "out", num_parts=4, progress=False)
    assert len({p.node for p in report.parts}) == 2, "the parts ran on one node"
    assert report.samples == 20 and report.merge["copied_files"] == 0
    assert_same_dataset(whole, tmp_path / "out")


# A driver of its own (a subprocess connected to the cluster) that is SIGKILLed `delay` seconds
# after its merge starts.
DRIVER = textwrap.dedent("""
    import os, signal, sys, threading
    import ray
    import docfeed, docfeed.ray
    address, src, out, parts, delay = sys.argv[1:6]
    real_merge = docfeed.merge

    def merge_then_die(*args, **kwargs):
        print("merging", flush=True)
        threading.Timer(float(delay), os.kill, (os.getpid(), signal.SIGKILL)).start()
        return real_merge(*args, **kwargs)

    docfeed.merge = merge_then_die
    ray.init(address=address, log_to_driver=False)
    docfeed.ray.pack(src, out, num_parts=4, parts_dir=parts, progress=False)
    print("merged", flush=True)
    signal.pause()  # the timer kills it
""")


def test_a_driver_killed_during_the_merge_is_finished_by_a_rerun(cluster, tmp_path, whole):
    parts = tmp_path / "parts"
    killed_before_commit = 0
    for delay in (0, 0.005):
        out = tmp_path / f"out-{delay}"
        proc = subprocess.run([sys.executable, "-c", DRIVER, cluster.address, str(SAMPLE_DOCS),
                               str(out), str(parts), str(delay)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == -9, proc.stderr
        assert "merging" in proc.stdout, proc.stderr
        if out.exists():  # the merge committed before the kill: complete and verified
            run_docfeed("verify", out)
        else:
            killed_before_commit += 1
            with pytest.raises(FileNotFoundError):
                datasets.load_from_disk(str(out))
        stamps = [os.stat(parts / str(i) / "docfeed.json").st_mtime_ns for i in range(4)]
        report = docfeed.ray.pack(SAMPLE_DOCS, out, num_parts=4, parts_dir=parts,
                                  progress=False)
        assert report.parts_reused == [0, 1, 2, 3]
        assert stamps == [os.stat(parts / str(i) / "docfeed.json").st_mtime_ns
                          for i in range(4)]
        assert not list(tmp_path.glob(f"out-{delay}.partial-*"))
        assert_same_dataset(whole, out)
    # The merge (verify included) takes milliseconds: the kill at 0 s lands before its commit.
    assert killed_before_commit >= 1

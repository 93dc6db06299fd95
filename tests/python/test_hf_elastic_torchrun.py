"""docfeed.hf resumes a Trainer checkpoint under another world size (an elastic resume), with
multi-node torchrun: two "nodes" of one process each on 127.0.0.1 (`torchrun --nnodes 2
--node_rank 0/1 --nproc_per_node 1`, gloo), the tiny random Donut of test_hf_trainer.py, 12
documents, per-device batch 2 (3 steps an epoch with 2 ranks).

* 2 -> 1, global batch kept: the 2 nodes train 4 steps (epoch 0 and one step of epoch 1) and
  save checkpoint-4; one process resumes it with DocfeedDataset(elastic="global_batch"), which
  makes its per-device batch 4 (Trainer would restore the checkpoint's 2), to step 6, the end
  of epoch 1. The Trainer's epochs line up with docfeed's.
* 1 -> 2, per-rank batch kept: one process (batch 2, 6 steps an epoch) trains 4 steps (8
  samples of epoch 0) and saves; the 2 nodes resume it: the Trainer thinks it is in its epoch 1
  (4 // 3), docfeed finishes epoch 0 (1 step) and then serves epoch 1 (3 steps) to step 8.

The one-process runs train in the test's own process (no second start of torch and
transformers); the 2 nodes are one torchrun launch that trains the 2 -> 1 job's first part, then
resumes the 1 -> 2 job. Each run records every batch the Trainer takes (docfeed epoch, sample
ids) and the steps it made. Checked: every rank of a run makes the same number of steps (no rank
waits at an epoch's end: the launch ends, within its timeout), and over each job every epoch
serves each of the 12 samples exactly once (12 is a multiple of every step here, so nothing is
dropped). Bounded: gloo's timeout 60 s, the launch 150 s (then killed); about 40 s on 2 cores.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import collections

import pytest

from test_hf_trainer import pack_documents

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCH_TIMEOUT_S = 150

# The two nodes' processes run this: the process group (gloo, bounded), then train_runs().
WORKER = r"""
import datetime, json, os, sys
import torch.distributed as dist
sys.path.insert(0, sys.argv[1])
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
from test_hf_elastic_torchrun import train_runs
train_runs(json.loads(sys.argv[2]))
dist.destroy_process_group()
# Then leave without the interpreter's finalization, where the gloo process group the Trainer's
# DDP model still holds sometimes aborts the process ("terminate called without an active
# exception"; pytorch/pytorch#190489). train_runs has closed its result files.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""


class Recording:
    """What the Trainer iterates: docfeed's loader, each batch it hands out recorded as
    [docfeed epoch, sample ids]."""

    def __init__(self, inner, log):
        self.inner, self.log = inner, log

    def set_epoch(self, epoch):
        self.inner.set_epoch(epoch)

    def __len__(self):
        return len(self.inner)

    def __iter__(self):
        for batch in self.inner:
            self.log.append([batch.epoch, batch.sample_ids.tolist()])
            yield batch


def train_runs(runs):
    """Trains each run (a dict: output_dir, ds, batch, max_steps, save_steps, resume, elastic)
    in this process, as one rank of whatever torch.distributed job it is in; writes
    result{rank}.json (batches taken, loss computations, global_step, final loader state) to
    the run's output_dir."""
    import torch
    import torch.distributed as dist
    from transformers import Seq2SeqTrainingArguments

    import docfeed.hf
    from test_hf_trainer import SIZE, char_tokenizer, documents, tiny_donut

    torch.set_num_threads(1)
    world = dist.get_world_size() if dist.is_initialized() else 1
    rank = dist.get_rank() if dist.is_initialized() else 0
    torch_load = torch.load
    if world > 1:
        # Trainer loads a checkpoint's optimizer state with map_location=args.device under
        # several processes, on CPU torch.device("cpu", local_rank), which torch.load cannot
        # map to (a transformers 4.57 limitation of CPU DDP resumes, not docfeed's; on GPUs it
        # is "cuda:N"). Plain "cpu" is the same memory.
        def cpu_load(*args, map_location=None, **kwargs):
            if isinstance(map_location, torch.device) and map_location.type == "cpu":
                map_location = "cpu"
            return torch_load(*args, map_location=map_location, **kwargs)

        torch.load = cpu_load

    class Trainer(docfeed.hf.Seq2SeqTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.batches, self.losses = [], 0

        def get_train_dataloader(self):
            return Recording(super().get_train_dataloader(), self.batches)

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if model.training:
                self.losses += 1
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

    tok = char_tokenizer([t for _, t in documents()])
    try:
        for run in runs:
            args = Seq2SeqTrainingArguments(
                output_dir=run["output_dir"], per_device_train_batch_size=run["batch"],
                max_steps=run["max_steps"], learning_rate=1e-3, lr_scheduler_type="constant",
                save_strategy="steps" if run["save_steps"] else "no",
                save_steps=run["save_steps"] or 1, report_to=[], use_cpu=True, seed=0,
                disable_tqdm=True, dataloader_drop_last=True,
                **(dict(ddp_backend="gloo", ddp_timeout=60) if world > 1 else {}))
            dataset = docfeed.hf.DocfeedDataset(run["ds"], image_size=SIZE, elastic=run["elastic"])
            trainer = Trainer(model=tiny_donut(len(tok)), args=args, train_dataset=dataset)
            trainer.train(resume_from_checkpoint=run["resume"])
            result = {"rank": rank, "world": world, "batches": trainer.batches,
                      "losses": trainer.losses, "global_step": trainer.state.global_step,
                      "state": trainer._docfeed_train.state_dict()}
            os.makedirs(run["output_dir"], exist_ok=True)
            with open(os.path.join(run["output_dir"], f"result{rank}.json"), "w") as f:
                json.dump(result, f)
    finally:
        torch.load = torch_load


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env():
    return dict(os.environ, OMP_NUM_THREADS="1", TRANSFORMERS_VERBOSITY="error",
                TOKENIZERS_PARALLELISM="false")


def wait_all(procs):
    """Waits for every process (each its own session); on timeout kills those it started and
    fails with their output."""
    outputs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=LAUNCH_TIMEOUT_S)
            outputs.append(out)
    except subprocess.TimeoutExpired:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        tails = [p.communicate()[0][-3000:] for p in procs]
        pytest.fail(f"a launch ran past {LAUNCH_TIMEOUT_S} s (a rank hung?):\n" + "\n".join(tails))
    for p, out in zip(procs, outputs):
        # The worker's own traceback first (torchrun's summary follows it).
        first = out.find("Traceback")
        assert p.returncode == 0, out[max(first, 0):][:5000] + "\n...\n" + out[-1500:]


def two_nodes(script, runs):
    """`torchrun --nnodes 2 --nproc_per_node 1`, node ranks 0 and 1, on 127.0.0.1."""
    port = str(free_port())
    procs = [subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node_rank", str(node),
         "--nproc_per_node", "1", "--master_addr", "127.0.0.1", "--master_port", port,
         str(script), HERE, json.dumps(runs)],
        env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True) for node in range(2)]
    wait_all(procs)


def results(folder, world):
    return [json.loads((folder / f"result{r}.json").read_text()) for r in range(world)]


def by_epoch(*runs):
    """{docfeed epoch: Counter of sample ids} over every rank of the given runs."""
    seen = collections.defaultdict(collections.Counter)
    for ranks in runs:
        for r in ranks:
            for epoch, ids in r["batches"]:
                seen[epoch].update(ids)
    return seen


def check_equal_steps(ranks, steps):
    assert [r["world"] for r in ranks] == [len(ranks)] * len(ranks)
    for r in ranks:
        assert r["global_step"] == steps[1], r
        assert len(r["batches"]) == r["losses"] == steps[1] - steps[0], r


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    ds, _ = pack_documents(tmp_path_factory.mktemp("elastic") / "ds")
    return ds


def test_resume_a_two_node_checkpoint_on_one_process_and_back(tmp_path, packed):
    ds = packed
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    every_sample = collections.Counter(range(12))

    def run(name, batch, max_steps, save_steps, resume=None, elastic=None):
        return {"output_dir": str(tmp_path / name), "ds": str(ds), "batch": batch,
                "max_steps": max_steps, "save_steps": save_steps, "resume": resume,
                "elastic": elastic}

    a1 = run("a1", 2, 4, 4)
    a2 = run("a2", 2, 6, 0, str(tmp_path / "a1" / "checkpoint-4"), "global_batch")
    b1 = run("b1", 2, 4, 4)
    b2 = run("b2", 2, 8, 0, str(tmp_path / "b1" / "checkpoint-4"), "rank_batch")
    train_runs([b1])  # one process: this one
    two_nodes(script, [a1, b2])
    train_runs([a2])

    # 2 -> 1, global batch 4 kept.
    saved = json.loads((tmp_path / "a1" / "checkpoint-4" / "docfeed_loader_state.json")
                       .read_text())["loader"]
    assert {k: saved[k] for k in ("epoch", "position", "world_size", "batch_size")} == \
        {"epoch": 1, "position": 4, "world_size": 2, "batch_size": 2}
    ranks_a1, ranks_a2 = results(tmp_path / "a1", 2), results(tmp_path / "a2", 1)
    check_equal_steps(ranks_a1, (0, 4))
    check_equal_steps(ranks_a2, (4, 6))
    assert [e for e, _ in ranks_a2[0]["batches"]] == [1, 1]  # the rest of epoch 1, in 2 steps
    assert ranks_a2[0]["state"]["elastic"] == "global_batch"
    assert ranks_a2[0]["state"]["batch_size"] == 4  # 2 x 2 over 1 rank
    seen = by_epoch(ranks_a1, ranks_a2)
    assert sorted(seen) == [0, 1]
    for epoch in (0, 1):
        assert seen[epoch] == every_sample, (epoch, seen[epoch])

    # 1 -> 2, per-rank batch 2 kept.
    saved = json.loads((tmp_path / "b1" / "checkpoint-4" / "docfeed_loader_state.json")
                       .read_text())["loader"]
    assert (saved["epoch"], saved["position"], saved["world_size"]) == (0, 8, 1)
    ranks_b1, ranks_b2 = results(tmp_path / "b1", 1), results(tmp_path / "b2", 2)
    check_equal_steps(ranks_b1, (0, 4))
    check_equal_steps(ranks_b2, (4, 8))
    for r in ranks_b2:
        # The Trainer resumed at its epoch 1; docfeed finished epoch 0 first.
        assert [e for e, _ in r["batches"]] == [0, 1, 1, 1]
        assert r["state"]["elastic"] == "rank_batch"
    seen = by_epoch(ranks_b1, ranks_b2)
    assert sorted(seen) == [0, 1]
    for epoch in (0, 1):
        assert seen[epoch] == every_sample, (epoch, seen[epoch])


def test_resume_batch_size_and_saved_epochs_with_nothing_left(packed):
    """The pieces of docfeed.hf the launch above does not reach: the global batch that does not
    divide over the new world size, and a saved epoch with no batch left for the new shape
    (over, or a tail shorter than a step), which continues with the next epoch (an empty epoch
    would stop the Trainer)."""
    import docfeed
    from docfeed.hf import DocfeedDataset, _resume_batch_size, _TrainLoader

    saved = {"world_size": 2, "batch_size": 3}
    assert _resume_batch_size("global_batch", saved, 3, 3) == 2
    assert _resume_batch_size("global_batch", saved, 1, 3) == 6
    assert _resume_batch_size("global_batch", None, 3, 5) == 5  # not resuming
    assert _resume_batch_size("rank_batch", saved, 1, 3) == 3
    assert _resume_batch_size(None, saved, 4, 3) == 3
    with pytest.raises(ValueError, match=r"world_size 2 and batch_size 3 \(global batch 6\), "
                                         r"which does not divide over this run's world_size 4"):
        _resume_batch_size("global_batch", saved, 4, 3)
    with pytest.raises(ValueError, match="elastic must be None, 'same', 'global_batch' or "
                                         "'rank_batch', not 'global'"):
        DocfeedDataset(packed, image_size=(64, 48), elastic="global")

    def resumed(state, batch, trainer_epoch):
        loader = docfeed.Loader(packed, batch_size=batch, image_size=(64, 48), seed=0,
                                num_threads=1, rank=0, world_size=1)
        train = _TrainLoader(loader, state)
        train.set_epoch(trainer_epoch)
        return train

    # Epoch 2 was over (a 2 x 2 run's last step): the Trainer's epoch 3 is docfeed's 3.
    over = {"seed": 0, "epoch": 2, "position": 12, "world_size": 2, "batch_size": 2}
    train = resumed(over, 4, 3)
    assert (train.loader.epoch, len(train), train.epoch_offset) == (3, 3, 0)
    # 2 left of epoch 2 (a 1 x 2 run's state), resumed by the same shape: one batch; the Trainer
    # (whose epochs are counted in other steps) is in its epoch 1.
    tail = {"seed": 0, "epoch": 2, "position": 10, "world_size": 1, "batch_size": 2}
    train = resumed(tail, 2, 1)
    assert (train.loader.epoch, len(train), train.epoch_offset) == (2, 1, 1)
    train.loader.close()
    loader = docfeed.Loader(packed, batch_size=4, image_size=(64, 48), seed=0, num_threads=1,
                            rank=0, world_size=1)
    # Position 10 of a 2 x 2 run (itself resumed at 6 from a 1 x 2 one), resumed by 1 x 4 (the
    # global batch): 2 left, less than a step: dropped, epoch 3 follows.
    train = _TrainLoader(loader, dict(tail, world_size=2))
    train.set_epoch(1)
    assert (train.loader.epoch, len(train), train.epoch_offset) == (3, 3, 2)
    train.set_epoch(2)  # the Trainer's next epoch
    assert train.loader.epoch == 4

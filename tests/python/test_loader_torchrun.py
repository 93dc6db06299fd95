"""docfeed under `torchrun --nproc_per_node 2` (gloo): rank and world size come from
torch.distributed; the ranks read disjoint samples covering the epoch, get equal batch counts,
and together see exactly what one process sees with the same global order (batch k of a single
process with batch 2B is rank 0's batch k followed by rank 1's). Then docfeed.hf.Seq2SeqTrainer
trains the tiny Donut of test_hf_trainer.py for a few DDP steps, every rank on its own samples.
About 20 s on 2 cores.
"""
import json
import os
import socket
import subprocess
import sys

import pytest
import torch

import docfeed
from test_hf_trainer import SIZE, pack_documents

WORKER = r"""
import hashlib, json, os, sys
import torch, torch.distributed as dist
sys.path.insert(0, sys.argv[3])
import docfeed, docfeed.hf
from test_hf_trainer import SIZE, RecordingTrainer, tiny_donut, char_tokenizer, documents

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
ds, out = sys.argv[1], sys.argv[2]
result = {"rank": rank, "world": world, "epochs": []}
loader = docfeed.Loader(ds, batch_size=2, image_size=SIZE, seed=5, num_threads=1)
assert (loader.rank, loader.world_size) == (rank, world)
for epoch in range(2):
    loader.set_epoch(epoch)
    batches = [(b.sample_ids.tolist(),
                hashlib.sha256(b["pixel_values"].numpy().tobytes()).hexdigest()) for b in loader]
    result["epochs"].append(batches)
result["len"] = len(loader)

from transformers import Seq2SeqTrainingArguments
tok = char_tokenizer([t for _, t in documents()])
args = Seq2SeqTrainingArguments(
    output_dir=os.path.join(out, "trainer"), per_device_train_batch_size=2, max_steps=3,
    learning_rate=1e-3, save_strategy="no", report_to=[], use_cpu=True, seed=0,
    disable_tqdm=True, dataloader_drop_last=True, ddp_backend="gloo")
trainer = RecordingTrainer(model=tiny_donut(len(tok)), args=args,
                           train_dataset=docfeed.hf.DocfeedDataset(ds, image_size=SIZE))
trainer.train()
result["trainer_seen"] = trainer.seen
result["trainer_losses"] = trainer.losses
with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
    json.dump(result, f)
loader.close()
dist.destroy_process_group()
# Then leave without the interpreter's finalization: the Trainer's DDP model still holds the
# gloo process group, whose threads, destroyed during finalization, sometimes abort the process
# ("terminate called without an active exception", seen in both venvs here under load;
# pytorch/pytorch#190489). Everything the test checks is in the file closed above.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torchrun_two_processes(tmp_path):
    ds, _ = pack_documents(tmp_path / "ds")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, OMP_NUM_THREADS="1", TRANSFORMERS_VERBOSITY="error")
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
         "--master_addr", "127.0.0.1", "--master_port", str(free_port()), str(script), str(ds),
         str(tmp_path), here], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["world"] for r in ranks] == [2, 2]
    single = docfeed.Loader(ds, batch_size=4, image_size=SIZE, seed=5, rank=0, world_size=1)
    import hashlib

    for epoch in range(2):
        single.set_epoch(epoch)
        want = []
        for b in single:
            pix = b["pixel_values"]
            want.append([(b.sample_ids[2 * r:2 * r + 2].tolist(),
                          hashlib.sha256(pix[2 * r:2 * r + 2].numpy().tobytes()).hexdigest())
                         for r in range(2)])
        got0, got1 = (ranks[r]["epochs"][epoch] for r in range(2))
        assert len(got0) == len(got1) == len(want) == 3  # 12 samples / (2 ranks x 2)
        for k, step in enumerate(want):
            assert [tuple(got0[k]), tuple(got1[k])] == [tuple(x) for x in step]
        ids0 = {s for ids, _ in got0 for s in ids}
        ids1 = {s for ids, _ in got1 for s in ids}
        assert not ids0 & ids1 and ids0 | ids1 == set(range(12))
    # DDP training through docfeed.hf: 3 steps on each rank, disjoint batches, finite losses.
    seen = [r["trainer_seen"] for r in ranks]
    assert len(seen[0]) == len(seen[1]) == 3
    assert not set(seen[0]) & set(seen[1])
    assert all(l == l and l < 1e4 for r in ranks for l in r["trainer_losses"])

"""Data-parallel training with PyTorch, checkpointed with torch.distributed.checkpoint.

One script for DDP (`--parallel ddp`) and FSDP2 (`--parallel fsdp`, each
rank keeps a shard of the parameters and the optimizer state). It runs
unchanged on GPUs (nccl) and on CPUs (gloo), started by torchrun, which
TauGrid runs on every worker of the gang (`launcher: torchrun`).

TauGrid's side of the contract is three environment variables:
- TAU_CHECKPOINT_DIR: where checkpoints go. Each one is written by all
  ranks into `step-NNNNNN.tmp` (torch.distributed.checkpoint writes its
  `.metadata` last), then rank 0 renames it to `step-NNNNNN` once every
  rank is done: a checkpoint is either complete or absent.
- TAU_RESUME_FROM: set on a retry to the newest complete checkpoint; the
  run carries on from its global step, with the same data it would have
  seen, so a resumed run ends with the same weights as an uninterrupted one.
- TAU_METRICS_FILE: rank 0 appends one JSON line per step (step,
  total_steps, loss), which `tau status` turns into progress and ETA.
"""

import argparse
import hashlib
import json
import os
import shutil
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

FEATURES = 32


def build_model(parallel: str, device: torch.device) -> torch.nn.Module:
    torch.manual_seed(0)  # every rank starts from the same weights
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to(device)
    if parallel == "fsdp":
        from torch.distributed.fsdp import fully_shard  # FSDP2
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(model)
        return model
    ids = [device.index] if device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)


def batch(step: int, rank: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch a rank sees at a global step: the same on every attempt."""
    g = torch.Generator().manual_seed(1_000_003 * step + rank)
    x = torch.randn(128, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = (x @ w).unsqueeze(1) + 0.01 * torch.randn(128, 1, generator=g)
    return x.to(device), y.to(device)


def save(model, optim, step: int, ckpt_dir: str, rank: int) -> str:
    final = os.path.join(ckpt_dir, f"step-{step:06d}")
    staging = final + ".tmp"  # never taken for a checkpoint
    if rank == 0:
        shutil.rmtree(staging, ignore_errors=True)  # left by a killed attempt
    dist.barrier()
    model_state, optim_state = get_state_dict(model, optim)
    dcp.save({"model": model_state, "optim": optim_state, "step": torch.tensor(step)},
             checkpoint_id=staging)
    dist.barrier()
    if rank == 0:
        os.rename(staging, final)
    dist.barrier()
    return final


def load(model, optim, path: str) -> int:
    model_state, optim_state = get_state_dict(model, optim)
    state = {"model": model_state, "optim": optim_state, "step": torch.tensor(0)}
    dcp.load(state, checkpoint_id=path)
    set_state_dict(model, optim, model_state_dict=state["model"], optim_state_dict=state["optim"])
    return int(state["step"])


def weights_digest(model) -> str:
    model_state, _ = get_state_dict(model, [])
    h = hashlib.sha256()
    for name in sorted(model_state):
        t = model_state[name]
        if hasattr(t, "full_tensor"):  # an FSDP2 shard: gather the whole tensor
            t = t.full_tensor()
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parallel", choices=["ddp", "fsdp"], default="ddp")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--step-time", type=float, default=0.0, help="seconds to pause per step (demos, tests)")
    args = parser.parse_args()

    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(f"cuda:{local_rank}") if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)

    model = build_model(args.parallel, device)
    optim = torch.optim.AdamW(model.parameters(), lr=0.01)
    ckpt_dir = os.environ.get("TAU_CHECKPOINT_DIR", "checkpoints")
    os.makedirs(ckpt_dir, exist_ok=True)
    step = 0
    resume = os.environ.get("TAU_RESUME_FROM")
    if resume:
        step = load(model, optim, resume)
        print(f"rank {rank}: resumed from {os.path.basename(resume)} at global step {step}", flush=True)
    print(f"rank {rank} of {world}: {args.parallel} on {backend}, steps {step + 1}..{args.steps}", flush=True)

    metrics = os.environ.get("TAU_METRICS_FILE")
    batches = 0
    while step < args.steps:
        x, y = batch(step, rank, device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optim.zero_grad()
        loss.backward()
        optim.step()
        step += 1
        batches += 1
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        mean = mean.item() / world
        if rank == 0 and metrics:
            with open(metrics, "a") as f:
                f.write(json.dumps({"step": step, "total_steps": args.steps, "loss": mean,
                                    "attempt": int(os.environ.get("TAU_ATTEMPT", "1")), "time": time.time()}) + "\n")
        if step % args.checkpoint_every == 0 or step == args.steps:
            path = save(model, optim, step, ckpt_dir, rank)
            if rank == 0:
                print(f"step {step} loss {mean:.4f} checkpoint {os.path.basename(path)}", flush=True)
        if args.step_time:
            time.sleep(args.step_time)
    digest = weights_digest(model)
    print(f"rank {rank}: done at global step {step} after {batches} batches; weights {digest}", flush=True)
    # Every rank is done with every collective before any leaves: a rank
    # that tears down first closes connections its peer still reads.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Ray Train: a TorchTrainer with 2 workers on the job's own Ray cluster.

TauGrid starts a Ray cluster for each attempt of a `workload_kind: rayjob`
(locally: one head and `compute.workers` worker nodes on 127.0.0.1; on
Kubernetes: a RayJob for KubeRay) and submits this driver to it. Ray Train
places one training worker on each node, sets up torch.distributed
between them (gloo on CPUs, nccl on GPUs) and wraps the model in DDP.
"""

import json
import os
import tempfile

import ray.train
import ray.train.torch
import torch
from ray.train import Checkpoint, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer

FEATURES = 16


def train_func(config: dict) -> None:
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    torch.manual_seed(0)
    model = ray.train.torch.prepare_model(torch.nn.Linear(FEATURES, 1))
    optim = torch.optim.SGD(model.parameters(), lr=0.05)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    print(f"worker rank {rank} of {world} on node {ray.get_runtime_context().get_node_id()[:8]}", flush=True)
    for step in range(1, config["steps"] + 1):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x = torch.randn(64, FEATURES, generator=g)
        loss = torch.nn.functional.mse_loss(model(x), (x @ w).unsqueeze(1))
        optim.zero_grad()
        loss.backward()
        optim.step()
        metrics = {"step": step, "loss": loss.item(), "rank": rank}
        if step % config["checkpoint_every"] == 0 or step == config["steps"]:
            with tempfile.TemporaryDirectory() as tmp:
                if rank == 0:
                    torch.save(model.state_dict(), os.path.join(tmp, "model.pt"))
                ray.train.report(metrics, checkpoint=Checkpoint.from_directory(tmp) if rank == 0 else None)
        else:
            ray.train.report(metrics)
        if rank == 0 and os.environ.get("TAU_METRICS_FILE"):
            with open(os.environ["TAU_METRICS_FILE"], "a") as f:
                f.write(json.dumps({"step": step, "total_steps": config["steps"], "loss": loss.item()}) + "\n")
    print(f"worker rank {rank} done after {config['steps']} steps, loss {loss.item():.4f}", flush=True)


def main() -> None:
    workers = int(os.environ.get("TRAIN_WORKERS", "2"))
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"steps": int(os.environ.get("TRAIN_STEPS", "30")), "checkpoint_every": 10},
        scaling_config=ScalingConfig(num_workers=workers, use_gpu=torch.cuda.is_available()),
        # Ray Train keeps its run (and checkpoints) under the job's outputs.
        run_config=RunConfig(name="ray-train", storage_path=os.environ.get("TAU_OUTPUT_DIR", "/tmp/ray-train")),
    )
    result = trainer.fit()
    print(f"result: step {result.metrics['step']} loss {result.metrics['loss']:.4f}; "
          f"checkpoint {os.path.basename(result.checkpoint.path) if result.checkpoint else None}", flush=True)


if __name__ == "__main__":
    main()

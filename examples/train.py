"""A small PyTorch training loop that runs as a Ray job or as a plain script.

Under Ray (workload_kind: rayjob) the loop runs as a Ray task on a worker
with the GPUs the job asked for; otherwise it runs in this process. It saves
a checkpoint each epoch into TAU_CHECKPOINT_DIR and resumes from
TAU_RESUME_FROM when TauGrid provides one.
"""

import json
import os
import time


def train(epochs: int = 5) -> dict:
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(1024, 32, device=device)
    y = x.sum(dim=1, keepdim=True)

    start = 0
    resume = os.environ.get("TAU_RESUME_FROM")
    if resume:
        state = torch.load(os.path.join(resume, "state.pt"), map_location=device)
        model.load_state_dict(state["model"])
        start = state["epoch"] + 1

    ckpt_dir = os.environ.get("TAU_CHECKPOINT_DIR")
    metrics = os.environ.get("TAU_METRICS_FILE")
    loss = None
    for epoch in range(start, epochs):
        for _ in range(200):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        print(f"epoch {epoch + 1}/{epochs} loss {loss.item():.4f} on {device}", flush=True)
        if metrics:
            with open(metrics, "a") as f:
                f.write(json.dumps({"step": epoch + 1, "total_steps": epochs, "loss": loss.item()}) + "\n")
        if ckpt_dir:
            tmp = os.path.join(ckpt_dir, f".epoch-{epoch}.tmp")
            os.makedirs(tmp, exist_ok=True)
            torch.save({"model": model.state_dict(), "epoch": epoch}, os.path.join(tmp, "state.pt"))
            os.rename(tmp, os.path.join(ckpt_dir, f"epoch-{epoch}"))
    return {"device": device, "final_loss": loss.item() if loss is not None else None}


def main() -> None:
    started = time.time()
    try:
        import ray
    except ImportError:
        ray = None
    if ray is not None and os.environ.get("RAY_ADDRESS"):
        ray.init()
        gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
        result = ray.get(ray.remote(num_gpus=gpus)(train).remote())
    else:
        result = train()
    print(f"done in {time.time() - started:.1f}s: {result}", flush=True)


if __name__ == "__main__":
    main()

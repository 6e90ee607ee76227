"""A stand-in for a training run, using only the standard library.

It takes about half a second per step, prints progress, appends a metrics
line per step to TAU_METRICS_FILE, saves a checkpoint every 5 steps into
TAU_CHECKPOINT_DIR (written under a temporary name, then renamed, so a
checkpoint is either complete or absent) and resumes from TAU_RESUME_FROM.
"""

import argparse
import json
import math
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--step-seconds", type=float, default=0.5)
    args = parser.parse_args()

    ckpt_dir = os.environ.get("TAU_CHECKPOINT_DIR")
    metrics_file = os.environ.get("TAU_METRICS_FILE")
    step, loss = 0, 2.5
    resume = os.environ.get("TAU_RESUME_FROM")
    if resume:
        with open(resume) as f:
            state = json.load(f)
        step, loss = state["step"], state["loss"]
        print(f"resuming from {resume} at step {step}", flush=True)

    attempt = os.environ.get("TAU_ATTEMPT", "1")
    print(f"quickstart: job {os.environ.get('TAU_JOB_ID', '-')} attempt {attempt}, "
          f"{args.steps} steps", flush=True)
    while step < args.steps:
        time.sleep(args.step_seconds)
        step += 1
        loss = loss * 0.85 + 0.02 * math.sin(step)
        print(f"step {step:3d}/{args.steps}  loss {loss:.4f}", flush=True)
        if metrics_file:
            with open(metrics_file, "a") as f:
                f.write(json.dumps({"step": step, "total_steps": args.steps, "loss": round(loss, 6)}) + "\n")
        if ckpt_dir and step % 5 == 0:
            final = os.path.join(ckpt_dir, f"step-{step:05d}.json")
            tmp = final + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"step": step, "loss": loss}, f)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, final)
            print(f"saved checkpoint {os.path.basename(final)}", flush=True)
    print(f"done: final loss {loss:.4f}", flush=True)


if __name__ == "__main__":
    main()

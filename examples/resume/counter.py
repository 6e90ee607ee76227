"""A job that checkpoints every step and resumes where it stopped.

It sums the squares of 0..STEPS-1, one step at a time. After each step it
writes its state to TAU_CHECKPOINT_DIR under a temporary name and renames
it into place, so a checkpoint is either complete or not there. When
TauGrid starts a later attempt it sets TAU_RESUME_FROM to the newest
complete checkpoint, and the job carries on from it.

With CRASH_AT_STEP set, the first attempt dies after that step (halfway
through writing the next checkpoint) to show a retry resuming.
"""

import json
import os

STEPS = int(os.environ.get("STEPS", "10"))
ckpt_dir = os.environ["TAU_CHECKPOINT_DIR"]

step, total = 0, 0
resume = os.environ.get("TAU_RESUME_FROM")
if resume:
    with open(resume) as f:
        state = json.load(f)
    step, total = state["step"], state["total"]
print(f"attempt {os.environ['TAU_ATTEMPT']} ({os.environ.get('TAU_RETRY_REASON', 'first run')}) "
      f"starts at step {step} from {os.path.basename(resume) if resume else 'scratch'}", flush=True)

crash_at = int(os.environ.get("CRASH_AT_STEP", "-1"))
while step < STEPS:
    total += step * step
    step += 1
    final = os.path.join(ckpt_dir, f"step-{step:04d}.json")
    with open(final + ".tmp", "w") as f:
        json.dump({"step": step, "total": total}, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(final + ".tmp", final)  # complete from here on
    if step == crash_at and os.environ["TAU_ATTEMPT"] == "1":
        with open(os.path.join(ckpt_dir, f"step-{step + 1:04d}.json.tmp"), "w") as f:
            f.write('{"step": ')  # killed mid-write: never offered
        os._exit(3)

print(f"total {total}", flush=True)

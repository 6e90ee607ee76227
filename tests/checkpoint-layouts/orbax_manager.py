"""Writes orbax-checkpoint CheckpointManager steps the way a job would
(steps 10 and 20 of a small pytree into the folder given). With --restore
STEP it restores that step, as a job does from TAU_RESUME_FROM, and prints
what it read."""
import argparse
import os

import numpy as np
import orbax.checkpoint as ocp

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--restore")
a = p.parse_args()

mngr = ocp.CheckpointManager(os.path.abspath(a.out), options=ocp.CheckpointManagerOptions(max_to_keep=10))
if a.restore:
    step = int(os.path.basename(a.restore))
    state = mngr.restore(step, args=ocp.args.StandardRestore({"w": np.zeros(4)}))
    print(f"restored step {step}: w = {state['w'].tolist()}", flush=True)
else:
    for step in (10, 20):
        mngr.save(step, args=ocp.args.StandardSave({"w": np.arange(4.0) * step}))
        mngr.wait_until_finished()
mngr.close()

"""Splits a synthetic data set into shards under TAU_OUTPUT_DIR (standard library only)."""

import argparse
import os
import random


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--rows", type=int, default=10000)
    args = parser.parse_args()
    out = os.environ.get("TAU_OUTPUT_DIR", ".")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(0)
    for shard in range(args.shards):
        path = os.path.join(out, f"shard-{shard:03d}.csv")
        with open(path, "w") as f:
            for _ in range(args.rows // args.shards):
                f.write(f"{rng.random():.6f},{rng.random():.6f}\n")
        print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()

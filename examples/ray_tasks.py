"""Spreads tasks over the job's Ray cluster and reports where they ran."""

import argparse
import collections
import socket

import ray


@ray.remote(num_cpus=1)
def square(x):
    return x * x, ray.get_runtime_context().get_node_id()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=8)
    args = parser.parse_args()
    ray.init()  # the job's cluster: RAY_ADDRESS is set for the driver
    results = ray.get([square.remote(i) for i in range(args.tasks)])
    per_node = collections.Counter(node for _, node in results)
    print(f"sum of squares of 0..{args.tasks - 1}: {sum(v for v, _ in results)}")
    print(f"{len(per_node)} worker nodes ran tasks on {socket.gethostname()}: "
          + ", ".join(f"{n[:8]}={c}" for n, c in sorted(per_node.items())))


if __name__ == "__main__":
    main()

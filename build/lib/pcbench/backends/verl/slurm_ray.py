"""A Ray cluster across the nodes of one Slurm job, built from the Slurm environment.

A multi-node verl job is submitted with one task per node (submitit: `tasks_per_node: 1`,
`nodes: N`); every task calls the job function. Task 0 starts the Ray head on the first node
and runs the trainer against it (RAY_ADDRESS); the other tasks join as workers and block
until the head goes away. A single-node job (or no Slurm) does nothing: verl's own
`ray.init` starts a local cluster.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

HEAD_PORT = 6379


@dataclass(frozen=True)
class SlurmLayout:
    nodes: list[str]  # hostnames, first is the head
    node_rank: int  # this task's node index (SLURM_NODEID)
    gpus_per_node: int

    @property
    def head(self) -> str:
        return self.nodes[0]

    @property
    def is_head(self) -> bool:
        return self.node_rank == 0


def expand_nodelist(nodelist: str) -> list[str]:
    """'gpu[01-03,07],cpu5' -> ['gpu01', 'gpu02', 'gpu03', 'gpu07', 'cpu5'] (scontrol show hostnames, in Python)."""
    out, i = [], 0
    while i < len(nodelist):
        j = i
        while j < len(nodelist) and nodelist[j] not in ",[":
            j += 1
        prefix = nodelist[i:j]
        if j < len(nodelist) and nodelist[j] == "[":
            k = nodelist.index("]", j)
            for part in nodelist[j + 1:k].split(","):
                lo, _, hi = part.partition("-")
                width = len(lo)
                out += [f"{prefix}{n:0{width}d}" for n in range(int(lo), int(hi or lo) + 1)]
            j = k + 1
        elif prefix:
            out.append(prefix)
        i = j + 1 if j < len(nodelist) and nodelist[j] == "," else j
    return out


def layout_from_env(env=os.environ) -> SlurmLayout | None:
    """None unless this is a Slurm job spanning more than one node."""
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodelist or int(env.get("SLURM_JOB_NUM_NODES", env.get("SLURM_NNODES", "1"))) <= 1:
        return None
    gpus = env.get("SLURM_GPUS_ON_NODE") or env.get("SLURM_GPUS_PER_NODE", "0")
    return SlurmLayout(expand_nodelist(nodelist), int(env.get("SLURM_NODEID", "0")), int(str(gpus).split(":")[-1] or 0))


def ray_start_command(layout: SlurmLayout, port: int = HEAD_PORT) -> list[str]:
    cmd = ["ray", "start", f"--num-gpus={layout.gpus_per_node}", "--disable-usage-stats"]
    if layout.is_head:
        return cmd + ["--head", f"--port={port}", f"--node-ip-address={socket.gethostbyname(layout.head)}"]
    return cmd + [f"--address={layout.head}:{port}", "--block"]


def wait_for_nodes(expected: int, timeout_s: float = 600.0) -> None:
    import ray

    ray.init(address="auto")
    deadline = time.time() + timeout_s
    while len([n for n in ray.nodes() if n.get("Alive")]) < expected:
        if time.time() > deadline:
            raise RuntimeError(f"only {len(ray.nodes())}/{expected} Ray nodes joined within {timeout_s:.0f} s; "
                               f"check the worker tasks' logs in the submitit folder")
        time.sleep(2)
    ray.shutdown()


def bootstrap() -> bool:
    """Set up Ray for this task. True: this task runs the trainer; False: worker, already done."""
    layout = layout_from_env()
    if layout is None:
        return True
    if not layout.is_head:
        time.sleep(10)  # let the head come up first
        subprocess.run(ray_start_command(layout), check=False)  # blocks until the head stops
        return False
    subprocess.run(ray_start_command(layout), check=True)
    os.environ["RAY_ADDRESS"] = f"{layout.head}:{HEAD_PORT}"
    wait_for_nodes(len(layout.nodes))
    print(f"pcbench: Ray cluster up on {len(layout.nodes)} nodes (head {layout.head})", file=sys.stderr, flush=True)
    return True

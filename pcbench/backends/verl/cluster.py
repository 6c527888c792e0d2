"""The head's watch over a multi-node run's Ray cluster: where things run, and lost nodes.

The entry (on the head node of a multi-node Slurm job, after slurm_ray.bootstrap) is connected
to the job's Ray cluster as a second driver. While verl runs, `ClusterMonitor.poll` (called by
the watchdog's loop every few seconds) reads Ray's GCS tables, no dashboard needed:

- `cluster.json` in the run folder: the nodes and their IPs, the live Ray nodes, and which node
  hosts each of verl's FSDP worker ranks (actors named `..._<placement group>:<local rank>`) and
  each vLLM rollout server (`...server_<replica>_<node rank>`), as first seen alive;
- a node of the job that Ray declares dead (its raylet missed the GCS health checks) ends the
  run at once with one line naming it, instead of verl waiting on its actors until the watchdog.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

CLUSTER_FILE = "cluster.json"
_WORKER = re.compile(r"_(\d+):(\d+)$")  # verl RayWorkerGroup: f"{prefix}{cls}_{pg_idx}:{local_rank}"
_SERVER = re.compile(r"server_(\d+)_(\d+)")  # verl rollout replica: f"{prefix}server_{replica}_{node_rank}"


def roles(actors: list[dict]) -> dict:
    """FSDP ranks and vLLM servers -> node, from actor records {name, class, node}.
    Ranks are numbered as verl numbers them: placement groups in order, local ranks within."""
    workers = sorted((tuple(map(int, m.groups())), a) for a in actors if (m := _WORKER.search(a["name"])))
    servers = sorted((tuple(map(int, m.groups())), a) for a in actors if (m := _SERVER.search(a["name"])))
    return {"fsdp_ranks": {str(rank): a["node"] for rank, (_key, a) in enumerate(workers)},
            "vllm_servers": [{"replica": k[0], "node_rank": k[1], "node": a["node"]} for k, a in servers]}


class ClusterMonitor:
    """Polls the Ray cluster the head started (slurm_ray.CLUSTER); writes <run>/cluster.json."""

    def __init__(self, cluster: dict, run_dir: Path):
        self.cluster = cluster
        self.path = Path(run_dir) / CLUSTER_FILE
        self.actors: dict[str, dict] = {}  # actor id -> {name, class, node, ip}
        self.ray_nodes: dict[str, dict] = {}  # hostname -> {ip, alive}
        self.lost: list[str] = []

    def snapshot(self) -> None:
        import ray
        from ray._private import state

        nodes = ray.nodes()
        by_id = {n["NodeID"]: n for n in nodes}
        self.ray_nodes = {n["NodeManagerHostname"]: {"ip": n["NodeManagerAddress"], "alive": bool(n["Alive"])}
                          for n in nodes if n["NodeManagerHostname"] in self.cluster["nodes"]}
        for aid, a in state.actors().items():
            node = by_id.get(a["Address"]["NodeID"])
            if a["State"] == "ALIVE" and aid not in self.actors and node is not None:
                self.actors[aid] = {"name": a["Name"], "class": a["ActorClassName"],
                                    "node": node["NodeManagerHostname"], "ip": a["Address"]["IPAddress"]}
        self.lost = [n for n in self.cluster["nodes"] if n in self.ray_nodes and not self.ray_nodes[n]["alive"]]

    def write(self) -> None:
        doc = {"nodes": self.cluster["nodes"], "ips": self.cluster["ips"], "head": self.cluster["address"],
               "slurm_job_id": self.cluster.get("job_id", ""), "ray_nodes": self.ray_nodes, "lost": self.lost,
               **roles(list(self.actors.values())), "actors": sorted(self.actors.values(), key=lambda a: a["name"]),
               "time": time.time()}
        tmp = self.path.with_name(f".{CLUSTER_FILE}.tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        tmp.replace(self.path)

    def poll(self) -> str | None:
        """None while every node is alive; else the one-line reason to stop the run."""
        try:
            before = (len(self.actors), dict(self.ray_nodes))
            self.snapshot()
            if (len(self.actors), self.ray_nodes) != before:
                self.write()
        except Exception as e:  # noqa: BLE001 - the GCS itself gone (head trouble): the watchdog decides
            print(f"pcbench: cannot read the Ray cluster state ({type(e).__name__}: {e})", flush=True)
            return None
        if not self.lost:
            return None
        ips = ", ".join(f"{n} ({self.cluster['ips'].get(n, '?')})" for n in self.lost)
        return f"Ray node {ips} of Slurm job {self.cluster.get('job_id') or '?'} died; run stopped"

    def wait_for_loss(self, timeout_s: float, poll_s: float = 2.0) -> str | None:
        """After verl failed on its own: give Ray time to declare a dead node (its health checks)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if (msg := self.poll()) is not None:
                return msg
            time.sleep(poll_s)
        return None

"""pcbench's multi-node Ray bootstrap (pcbench/backends/verl/slurm_ray.py) on the 2-node test
cluster, without verl: 2-node submitit jobs whose tasks call `bootstrap` as pcbench.run does.

- the cluster spans both nodes (each node's hostname and IP seen from a task pinned to it), an
  allocator module from a folder outside pcbench imports on both nodes through the runtime
  environment pcbench gives verl, and the job ends COMPLETED on both nodes once the driver returns;
- a worker whose head never comes up, and a head whose worker never joins, each fail the job
  within the join timeout with one line naming the node and its log;
- the head node powered off: the job ends (NODE_FAIL), no task left waiting.
A few seconds to ~40 s each (the node failure waits for Slurm's SlurmdTimeout)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import cloudpickle
import pytest
import submitit

pytestmark = [pytest.mark.slurm]
ALLOC_MODULE = '''
from pcbench.allocators.base import register_allocator
from pcbench.allocators.grpo import GRPO


@register_allocator("ext_grpo_2n")
class ExtGRPO(GRPO):
    """An allocator outside pcbench (method.module), for the multi-node import test."""
'''


def _cfg(join_timeout_s: float):
    from omegaconf import OmegaConf

    return OmegaConf.create({"model": {"nnodes": 2, "n_gpus_per_node": 0},
                             "backend": {"ray_num_cpus": 1, "ray_port": 6390, "ray_join_timeout_s": join_timeout_s}})


def _spans_both_nodes(module_dir: str) -> dict:
    """The job: bootstrap; on the head, one task pinned to each node imports the external module."""
    import socket

    from pcbench.backends.verl import slurm_ray

    if not slurm_ray.bootstrap(_cfg(60)):
        return {"role": "worker", "host": socket.gethostname()}
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from pcbench.backends.verl.config import runtime_env_vars

    sys.path.insert(0, module_dir)  # importable here only, as from the directory a user runs in
    env = runtime_env_vars("gpu", {}, "ext_alloc_2n")

    @ray.remote(num_cpus=0)
    def probe():
        from pcbench.allocators.base import get_allocator_cls

        return socket.gethostname(), socket.gethostbyname(socket.gethostname()), get_allocator_cls(
            "ext_grpo_2n", "ext_alloc_2n").__name__

    nodes = slurm_ray.alive_nodes(os.environ["RAY_ADDRESS"])
    refs = [probe.options(runtime_env={"env_vars": env}, scheduling_strategy=NodeAffinitySchedulingStrategy(
        n["NodeID"], soft=False)).remote() for n in nodes.values()]
    return {"role": "head", "ray_nodes": sorted(nodes), "probes": sorted(ray.get(refs, timeout=120))}


def _head_absent_or_worker_absent(absent: int, join_timeout_s: float) -> str:
    """Task `absent` never starts Ray (a head that is not up / a worker that never joins)."""
    from pcbench.backends.verl import slurm_ray

    if int(os.environ["SLURM_NODEID"]) == absent:
        time.sleep(join_timeout_s + 3 if absent == 0 else 0)
        return "absent"
    slurm_ray.bootstrap(_cfg(join_timeout_s))
    return "joined"


def _hold_the_cluster(marker: str) -> str:
    """Bootstrap, tell the test the cluster is up, then wait (the test powers a node off)."""
    from pcbench.backends.verl import slurm_ray

    if slurm_ray.bootstrap(_cfg(60)):
        Path(marker).write_text("up")
        time.sleep(240)
    return "ended"


cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _executor(cluster, folder: Path, monkeypatch, **extra):
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", str(Path(__file__).resolve().parents[2])))
    ex = submitit.AutoExecutor(folder=folder / "%j", cluster="slurm")
    ex.update_parameters(slurm_nodes=2, tasks_per_node=1, cpus_per_task=1, timeout_min=5,
                         slurm_partition=cluster.partition, slurm_additional_parameters={"no-requeue": True, **extra})
    return ex


def _wait_done(cluster, job_id: str, timeout_s: float = 180) -> str:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        state = cluster.job_state(job_id)
        if state and state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED"):
            return state
        time.sleep(1)
    why = cluster.cmd("squeue", "-h", "-j", str(job_id), "-o", "%T %r", check=False).strip()
    raise TimeoutError(f"job {job_id} still {why or cluster.job_state(job_id)} after {timeout_s} s; "
                       f"nodes {cluster.node_states()}")


def test_ray_spans_both_nodes_and_external_allocator_imports_everywhere(multinode_cluster, tmp_path, monkeypatch):
    cluster = multinode_cluster
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "ext_alloc_2n.py").write_text(ALLOC_MODULE)
    job = _executor(cluster, tmp_path, monkeypatch).submit(_spans_both_nodes, str(tmp_path / "ext"))
    head, worker = job.results()
    assert worker == {"role": "worker", "host": cluster.nodes[1]}
    assert head["ray_nodes"] == cluster.nodes
    assert head["probes"] == [(n, ip, "ExtGRPO") for n, ip in zip(cluster.nodes, cluster.ips)]
    assert _wait_done(cluster, job.job_id) == "COMPLETED"  # the worker's Ray left with the head
    steps = cluster.cmd("sacct", "-n", "-P", "-j", job.job_id, "-o", "JobID,State,NodeList").split()
    assert f"{job.job_id}.0|COMPLETED|mn[0-1]" in steps, steps
    print(f"job {job.job_id}: {steps}; probes {head['probes']}")


@pytest.mark.parametrize("absent", [0, 1], ids=["head-never-up", "worker-never-joins"])
def test_a_node_that_cannot_join_fails_the_job_naming_it(multinode_cluster, tmp_path, monkeypatch, absent):
    cluster = multinode_cluster
    job = _executor(cluster, tmp_path, monkeypatch).submit(_head_absent_or_worker_absent, absent, 10.0)
    start = time.monotonic()
    state = _wait_done(cluster, job.job_id)
    assert state == "FAILED"
    failing = 1 - absent  # the task that waited for the absent one
    err = Path(str(job.paths.stderr).replace("_0_", f"_{failing}_")).read_text()
    [line] = [x for x in err.splitlines() if x.startswith("pcbench: ") and ("did not join" in x or "could not reach" in x)]
    if absent == 0:
        assert f"node {cluster.nodes[1]} could not reach the Ray head {cluster.nodes[0]}" in line, line
    else:
        worker_log = str(job.paths.stderr).replace("_0_", "_1_")
        assert f"Ray node(s) {cluster.nodes[1]} did not join" in line and worker_log in line, line
    print(f"{'head never up' if absent == 0 else 'worker never joins'}: job {job.job_id} {state} after "
          f"{time.monotonic() - start:.0f} s (join timeout 10 s): {line}")


def test_head_node_dies_the_job_ends(multinode_cluster, tmp_path, monkeypatch):
    cluster = multinode_cluster
    marker = tmp_path / "up"
    job = _executor(cluster, tmp_path, monkeypatch).submit(_hold_the_cluster, str(marker))
    end = time.monotonic() + 120
    while not marker.exists():
        assert time.monotonic() < end and cluster.job_state(job.job_id) in ("PENDING", "RUNNING"), \
            Path(str(job.paths.stderr)).read_text()
        time.sleep(0.5)
    try:
        os.kill(int((cluster.dir / "run" / f"node-{cluster.nodes[0]}.pid").read_text()), signal.SIGKILL)
        killed = time.monotonic()
        state = _wait_done(cluster, job.job_id, timeout_s=120)
        assert state == "NODE_FAIL", state
        print(f"head node powered off: job {job.job_id} {state} after {time.monotonic() - killed:.0f} s")
    finally:
        cluster.restart()

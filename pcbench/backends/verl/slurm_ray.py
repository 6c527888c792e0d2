"""A Ray cluster across the nodes of one Slurm job, built from the Slurm environment.

A multi-node verl job is submitted with one task per node (submitit: `tasks_per_node: 1`,
`nodes: N`); every task calls the job function. Task 0 starts the Ray head on the first node,
waits until every node has joined and runs the trainer against it (RAY_ADDRESS); the other
tasks join as workers. A single-node job (or no Slurm) does nothing: verl's own `ray.init`
starts a local cluster.

Every `ray start` is `--block` and a child of its task, so Slurm's end of the step takes its
daemons down even where proctrack does not follow reparented processes; pcbench stops them
itself first (SIGTERM to the `ray start`, then its session), never with `ray stop`, which kills
every Ray process on the machine. A worker does not trust `ray start --block` to return when the
head goes away (its raylet waits a minute for the GCS, and `--block` then keeps running): it
probes the head's port and ends its Ray within seconds of the head closing it, so the job ends
when the trainer does. Joining is bounded on both sides (`backend.ray_join_timeout_s`): a node
that does not join fails the job with one line naming the node and its log.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HEAD_PORT = 6379
PROBE_S = 1.0  # how often a worker checks that the head is still there
HEAD_GONE_PROBES = 3  # consecutive failed probes before a worker calls the head gone


class RayBootstrapError(RuntimeError):
    """A node could not start or join the job's Ray cluster (the message names node and log)."""


@dataclass(frozen=True)
class SlurmLayout:
    nodes: list[str]  # hostnames, first is the head
    node_rank: int  # this task's node index (SLURM_NODEID)
    gpus_per_node: int
    job_id: str = ""

    @property
    def head(self) -> str:
        return self.nodes[0]

    @property
    def is_head(self) -> bool:
        return self.node_rank == 0

    @property
    def me(self) -> str:
        return self.nodes[self.node_rank]


@dataclass(frozen=True)
class RaySpec:
    """What each node offers Ray. num_gpus: the model's GPUs per node (on the CPU platform one
    fake "GPU" per node, which verl's placement asks for); num_cpus: logical CPUs (None: Ray's count)."""

    num_gpus: int
    num_cpus: int | None = None
    port: int = HEAD_PORT
    join_timeout_s: float = 300.0


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
    return SlurmLayout(expand_nodelist(nodelist), int(env.get("SLURM_NODEID", "0")),
                       int(str(gpus).split(":")[-1] or 0), str(env.get("SLURM_JOB_ID", "")))


def node_ip(name: str) -> str:
    """The address Ray and gloo use for a node: its name resolved as every node resolves it.
    Passed explicitly (--node-ip-address) so Ray does not guess from the default route."""
    try:
        return socket.gethostbyname(name)
    except OSError as e:
        raise RayBootstrapError(f"node {name} has no address ({e}); check /etc/hosts or DNS on the nodes") from None


def ray_start_command(layout: SlurmLayout, spec: RaySpec, ip: str, head_ip: str) -> list[str]:
    """`ray start` for this node; always `--block` (see the module docstring)."""
    cmd = ["ray", "start", "--block", "--disable-usage-stats", f"--node-ip-address={ip}", f"--num-gpus={spec.num_gpus}"]
    if spec.num_cpus is not None:
        cmd.append(f"--num-cpus={spec.num_cpus}")
    if layout.is_head:
        return cmd + ["--head", f"--port={spec.port}", "--include-dashboard=false"]
    return cmd + [f"--address={head_ip}:{spec.port}"]


def ray_env(env=os.environ) -> dict[str, str]:
    """Ray's token auth is asymmetric (a `ray start --head` turns it on when ~/.ray/auth_token
    exists, a joining `ray start` does not), so every process of the job gets the same
    RAY_AUTH_MODE: the user's, else `disabled`."""
    return {**env, "RAY_AUTH_MODE": env.get("RAY_AUTH_MODE", "disabled"), "RAY_USAGE_STATS_ENABLED": "0"}


def task_log(task: int, job_id: str = "") -> str:
    """Where Slurm task `task`'s output goes: submitit's per-task stderr when submitit runs the job."""
    if os.environ.get("SUBMITIT_FOLDER"):
        try:
            import submitit
            from submitit.core.utils import JobPaths

            job = submitit.JobEnvironment().job_id  # "<array job>_<index>" for array tasks
            return str(JobPaths(os.environ["SUBMITIT_FOLDER"], job_id=job, task_id=task).stderr)
        except Exception:  # noqa: BLE001 - a log path is a hint; never fail the job over it
            pass
    return f"the stderr of Slurm task {task} of job {job_id or '?'}"


def port_open(ip: str, port: int, timeout_s: float = 2.0) -> bool:
    try:
        with socket.create_connection((ip, port), timeout=timeout_s):
            return True
    except OSError:
        return False


class RayNode:
    """This node's `ray start --block`, in its own session; `stop()` ends it and whatever it started."""

    def __init__(self, cmd: list[str]):
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, env=ray_env(), start_new_session=True, stdin=subprocess.DEVNULL)

    def exited(self) -> int | None:
        return self.proc.poll()

    def stop(self, grace_s: float = 3.0) -> None:
        """SIGTERM, SIGKILL after `grace_s`: Ray 2.60 answers SIGTERM by draining for up to 30 s,
        which at the end of a run (its driver gone) only holds the nodes."""
        from pcbench.backends.verl.watchdog import kill_tree

        kill_tree(self.proc.pid, {self.proc.pid}, grace_s=grace_s)
        self.proc.wait()


def wait_until(check, timeout_s: float, poll_s: float = 0.5, alive=lambda: True) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and alive():
        if check():
            return True
        time.sleep(poll_s)
    return check()


def run_worker(layout: SlurmLayout, spec: RaySpec) -> None:
    """Join the head (bounded), serve Ray until the head closes its port, end this node's Ray."""
    log = task_log(layout.node_rank, layout.job_id)
    head_ip, ip = node_ip(layout.head), node_ip(layout.me)
    if not wait_until(lambda: port_open(head_ip, spec.port), spec.join_timeout_s, poll_s=1.0):
        raise RayBootstrapError(f"node {layout.me} could not reach the Ray head {layout.head} ({head_ip}:{spec.port}) "
                                f"within {spec.join_timeout_s:.0f} s (backend.ray_join_timeout_s); see {log} and the "
                                f"head's {task_log(0, layout.job_id)}")
    node = RayNode(ray_start_command(layout, spec, ip, head_ip))
    print(f"pcbench: node {layout.me} ({ip}) joining the Ray head {head_ip}:{spec.port}", file=sys.stderr, flush=True)
    misses = 0
    try:
        while misses < HEAD_GONE_PROBES:
            rc = node.exited()
            if rc is not None:
                raise RayBootstrapError(f"node {layout.me}: `ray start` exited with {rc} before the run ended; see {log}")
            time.sleep(PROBE_S)
            misses = 0 if port_open(head_ip, spec.port) else misses + 1
        print(f"pcbench: node {layout.me}: the Ray head closed; stopping this node's Ray", file=sys.stderr, flush=True)
    finally:
        node.stop()


def alive_nodes(address: str) -> dict[str, dict]:
    """NodeManagerHostname -> node info of the live Ray nodes (this process connects as a driver)."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    return {n["NodeManagerHostname"]: n for n in ray.nodes() if n.get("Alive")}


def start_head(layout: SlurmLayout, spec: RaySpec) -> str:
    """Start the head, wait (bounded) for every node; returns the cluster address. The head's Ray
    is stopped when this process exits."""
    ip = node_ip(layout.head)
    node = RayNode(ray_start_command(layout, spec, ip, ip))
    atexit.register(node.stop)
    address = f"{ip}:{spec.port}"
    log = task_log(0, layout.job_id)
    if not wait_until(lambda: port_open(ip, spec.port), spec.join_timeout_s, alive=lambda: node.exited() is None):
        raise RayBootstrapError(f"the Ray head on {layout.head} ({address}) did not come up "
                                f"(`ray start` exit {node.exited()}); see {log}")
    deadline = time.monotonic() + spec.join_timeout_s
    while set(layout.nodes) - set(alive_nodes(address)):
        if time.monotonic() > deadline or node.exited() is not None:
            missing = sorted(set(layout.nodes) - set(alive_nodes(address)), key=layout.nodes.index)
            where = "; ".join(f"{n}: {task_log(layout.nodes.index(n), layout.job_id)}" for n in missing)
            raise RayBootstrapError(f"Ray node(s) {', '.join(missing)} did not join the head {address} within "
                                    f"{spec.join_timeout_s:.0f} s (backend.ray_join_timeout_s); their logs: {where}")
        time.sleep(1.0)
    os.environ.update({"RAY_ADDRESS": address, "RAY_AUTH_MODE": ray_env()["RAY_AUTH_MODE"]})
    print(f"pcbench: Ray cluster up on {len(layout.nodes)} nodes ({', '.join(layout.nodes)}; head {address})",
          file=sys.stderr, flush=True)
    return address


def spec_from_config(cfg) -> RaySpec:
    """The Ray resources of a node for this pcbench config (see RaySpec)."""
    from pcbench.backends.verl.platform import resolve

    cpus = cfg.backend.get("ray_num_cpus")
    if cpus is None and resolve(cfg) == "cpu":
        cpus = 16  # logical CPUs: verl's CPU workers ask for more than a small node has (platform.apply_cpu)
    return RaySpec(num_gpus=int(cfg.model.n_gpus_per_node), num_cpus=None if cpus is None else int(cpus),
                   port=int(cfg.backend.get("ray_port", HEAD_PORT)),
                   join_timeout_s=float(cfg.backend.get("ray_join_timeout_s", 300)))


CLUSTER: dict = {}  # the head's view of the job's Ray cluster once bootstrap() ran (nodes, address)


def bootstrap(cfg) -> bool:
    """Set up Ray for this task. True: this task runs the trainer; False: a worker node, done serving.
    A node that cannot start or join exits with one line naming it and its log."""
    layout = layout_from_env()
    if layout is None:
        return True
    try:
        if not layout.is_head:
            run_worker(layout, spec_from_config(cfg))
            return False
        address = start_head(layout, spec_from_config(cfg))
    except RayBootstrapError as e:
        sys.exit(f"pcbench: {e}")
    CLUSTER.update(address=address, nodes=list(layout.nodes), job_id=layout.job_id,
                   ips={n: node_ip(n) for n in layout.nodes})
    return True

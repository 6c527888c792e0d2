"""Fixtures for the tests that run against a real (private, single-node) Slurm cluster.

Bring the cluster up first, then point the tests at it:

    tests/slurm/start.sh                    # as root; prints "slurm cluster up: ..."
    source /tmp/pcbench-slurm/env.sh        # exports SLURM_CONF and PCBENCH_SLURM_DIR
    .venv/bin/python -m pytest tests/slurm -m slurm

`slurm_cluster` (session scope) uses the cluster named by PCBENCH_SLURM_DIR/env.sh. Without
PCBENCH_SLURM_DIR the Slurm tests are skipped with the reason; with PCBENCH_SLURM_START=1 the
fixture runs start.sh itself (root only) and stop.sh at the end of the session. A cluster that
was asked for (PCBENCH_SLURM_DIR set) but does not answer is an error, not a skip, so that CI
cannot pass by silently skipping.

No __init__.py here: the suite runs with --import-mode=importlib (verl ships a top-level
`tests` package). Job functions defined in test modules are therefore pickled by value
(`cloudpickle.register_pickle_by_value`) since the job process cannot import the test module.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_DIR = "/tmp/pcbench-slurm"


def pytest_configure(config):
    # also declared in pyproject.toml; registering here keeps this folder self-contained
    config.addinivalue_line("markers", "slurm: needs the test Slurm cluster (tests/slurm/start.sh)")


def _read_env_sh(path: Path) -> dict[str, str]:
    """Parse the `export KEY=VALUE` lines that start.sh writes."""
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("export "):
            key, _, value = line[len("export "):].partition("=")
            env[key.strip()] = " ".join(shlex.split(value))
    return env


@dataclass
class SlurmCluster:
    """Handle on the running test cluster. `env` is os.environ plus env.sh's exports."""

    dir: Path
    conf: Path
    partition: str
    accounting: bool
    env: dict[str, str] = field(repr=False)

    def cmd(self, *args: str, check: bool = True, timeout: float = 30) -> str:
        out = subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
        return out.stdout

    def job_state(self, job_id: str) -> str:
        """State of a job, from squeue while it is known there, else from sacct."""
        state = self.cmd("squeue", "-h", "-j", str(job_id), "-o", "%T", check=False).strip()
        if not state and self.accounting:
            lines = self.cmd("sacct", "-n", "-X", "-P", "-j", str(job_id), "-o", "State", check=False).split()
            state = lines[0] if lines else ""
        return state

    def wait_idle(self, timeout: float = 60) -> None:
        """Wait until this cluster has no queued or running jobs (left over by a failed test)."""
        end = time.monotonic() + timeout
        while self.cmd("squeue", "-h", "-o", "%i", check=False).strip():
            if time.monotonic() > end:
                raise TimeoutError("jobs still queued:\n" + self.cmd("squeue", check=False))
            time.sleep(0.5)


def _alive(pidfile: Path, name: str) -> bool:
    try:
        pid = pidfile.read_text().strip()
        return Path(f"/proc/{pid}/comm").read_text().strip() == name
    except OSError:
        return False


def _start_cluster(env_dir: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("PCBENCH_SLURM_START=1 needs root (start.sh runs the Slurm daemons as root)")
    env = dict(os.environ, PCBENCH_SLURM_DIR=str(env_dir))
    out = subprocess.run(["bash", str(HERE / "start.sh")], env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        pytest.fail(f"tests/slurm/start.sh failed:\n{out.stdout}\n{out.stderr}", pytrace=False)


@pytest.fixture(scope="session")
def slurm_cluster():
    """The running Slurm test cluster; sets SLURM_CONF in os.environ for the session."""
    want_start = os.environ.get("PCBENCH_SLURM_START") == "1"
    env_dir = os.environ.get("PCBENCH_SLURM_DIR")
    if not env_dir and not want_start:
        pytest.skip("no Slurm test cluster: run tests/slurm/start.sh and `source /tmp/pcbench-slurm/env.sh` "
                    "(sets PCBENCH_SLURM_DIR), or set PCBENCH_SLURM_START=1")
    for tool in ("sbatch", "squeue", "sinfo", "scontrol", "scancel"):
        if shutil.which(tool) is None:
            pytest.skip(f"Slurm client `{tool}` not on PATH (apt-get install slurm-client; see tests/slurm/README.md)")
    env_dir = Path(env_dir or DEFAULT_DIR)
    started_here = False
    if want_start:
        # start.sh is idempotent; stop at the end only what was not running before
        started_here = not _alive(env_dir / "run" / "slurmctld.pid", "slurmctld")
        _start_cluster(env_dir)
    env_sh = env_dir / "env.sh"
    if not env_sh.exists():
        pytest.fail(f"PCBENCH_SLURM_DIR={env_dir} has no env.sh: run tests/slurm/start.sh first", pytrace=False)
    exports = _read_env_sh(env_sh)
    env = dict(os.environ, **exports)
    cluster = SlurmCluster(
        dir=env_dir,
        conf=Path(exports["SLURM_CONF"]),
        partition=exports.get("PCBENCH_SLURM_PARTITION", "debug"),
        accounting=exports.get("PCBENCH_SLURM_ACCOUNTING", "0") == "1",
        env=env,
    )
    try:
        state = cluster.cmd("sinfo", "-h", "-p", cluster.partition, "-o", "%t", timeout=15).split()
    except Exception as exc:  # noqa: BLE001 - report any failure to reach slurmctld
        pytest.fail(f"Slurm cluster in {env_dir} does not answer ({exc}); restart it with tests/slurm/start.sh; "
                    f"logs in {env_dir}/log", pytrace=False)
    if not any(s in ("idle", "mix", "alloc") for s in state):
        pytest.fail(f"partition {cluster.partition} of the cluster in {env_dir} is not usable (sinfo: {state})",
                    pytrace=False)
    if cluster.accounting:
        cluster.cmd("sacct", "-n", "-X", "-S", "now-1minute", timeout=15)  # sacct must work when configured
    mp = pytest.MonkeyPatch()
    for key, value in exports.items():
        mp.setenv(key, value)
    try:
        yield cluster
    finally:
        mp.undo()
        if started_here:
            subprocess.run(["bash", str(HERE / "stop.sh")], env=env, capture_output=True, timeout=120)


@pytest.fixture
def needs_accounting(slurm_cluster):
    """For tests where a job is killed or requeued: without sacct submitit can wait forever."""
    if not slurm_cluster.accounting:
        pytest.skip("needs Slurm accounting (start.sh with PCBENCH_SLURM_ACCOUNTING=1, the default)")
    return slurm_cluster


# -- the 2-node cluster (tests/slurm/start-multinode.sh) -----------------------------------------
MN_DEFAULT_DIR = "/tmp/pcbench-slurm-mn"


@dataclass
class MultinodeCluster(SlurmCluster):
    """The namespaced 2-node cluster: `nodes` (names), `ips`, `on_node(node, *cmd)`."""

    nodes: list[str] = field(default_factory=list)
    ips: list[str] = field(default_factory=list)

    def on_node(self, node: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.dir / "on-node"), node, *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def restart(self) -> None:
        """Bring dead nodes back (start-multinode.sh repairs: a node is recreated, its slurmd restarted)."""
        out = subprocess.run(["bash", str(HERE / "start-multinode.sh")], env=self.env, capture_output=True,
                             text=True, timeout=180)
        if out.returncode != 0:
            raise RuntimeError(f"start-multinode.sh failed:\n{out.stdout}\n{out.stderr}")

    def node_states(self) -> dict[str, str]:
        rows = self.cmd("sinfo", "-h", "-N", "-p", self.partition, "-o", "%N %T", check=False).split("\n")
        return dict(r.split() for r in rows if len(r.split()) == 2)

    def cancel_all(self) -> str:
        """Cancel every job in the queue (this private cluster runs only the tests' jobs); what was there."""
        queued = self.cmd("squeue", "-h", "-o", "%i %T %r %j", check=False).strip()
        if queued:
            self.cmd("scancel", *[r.split()[0] for r in queued.splitlines()], check=False)
        return queued

    def wait_ready(self, timeout: float = 120) -> None:
        """Every node idle, nothing queued: a test's 2-node job then starts at once. A node left
        down (not responding under load, or killed by an earlier test) is recreated once."""
        end, restarted = time.monotonic() + timeout, False
        while True:
            queued = self.cmd("squeue", "-h", "-o", "%i", check=False).strip()
            states = self.node_states()
            if not queued and len(states) == len(self.nodes) and all(s == "idle" for s in states.values()):
                return
            if not restarted and any(s.startswith(("down", "drain", "fail")) for s in states.values()):
                self.restart()
                restarted = True
            if time.monotonic() > end:
                raise TimeoutError(f"2-node cluster not ready after {timeout:.0f} s: nodes {states}; queue "
                                   + (self.cmd("squeue", "-h", "-o", "%i %T %r", check=False).strip() or "empty"))
            time.sleep(1)


@pytest.fixture
def multinode_cluster(_multinode_session):
    """The 2-node cluster, ready for one test: nodes idle and the queue empty before it (a node left
    down by an earlier test is recreated), and after it whatever job it left queued is cancelled, so that
    a job that started late cannot run beside (or a Ray worker join) the next test's."""
    _multinode_session.wait_ready()
    yield _multinode_session
    left = _multinode_session.cancel_all()
    if left:
        print(f"cancelled what the test left queued: {left}")


@pytest.fixture(scope="session")
def _multinode_session():
    """The running 2-node test cluster (PCBENCH_MN_DIR's env.sh), or started here with
    PCBENCH_MN_START=1 (root) and stopped at the end of the session if it was not running."""
    want_start = os.environ.get("PCBENCH_MN_START") == "1"
    env_dir = os.environ.get("PCBENCH_MN_DIR")
    if not env_dir and not want_start:
        pytest.skip("no 2-node Slurm test cluster: run tests/slurm/start-multinode.sh and "
                    "`source /tmp/pcbench-slurm-mn/env.sh` (sets PCBENCH_MN_DIR), or set PCBENCH_MN_START=1")
    env_dir = Path(env_dir or MN_DEFAULT_DIR)
    started_here = False
    if want_start:
        if os.geteuid() != 0:
            pytest.skip("PCBENCH_MN_START=1 needs root (namespaces, bridge, Slurm daemons)")
        started_here = not _alive(env_dir / "run" / "slurmctld.pid", "slurmctld")
        out = subprocess.run(["bash", str(HERE / "start-multinode.sh")], env=dict(os.environ, PCBENCH_MN_DIR=str(env_dir)),
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            pytest.fail(f"tests/slurm/start-multinode.sh failed:\n{out.stdout}\n{out.stderr}", pytrace=False)
    env_sh = env_dir / "env.sh"
    if not env_sh.exists():
        pytest.fail(f"PCBENCH_MN_DIR={env_dir} has no env.sh: run tests/slurm/start-multinode.sh first", pytrace=False)
    exports = _read_env_sh(env_sh)
    env = dict(os.environ, **exports)
    cluster = MultinodeCluster(dir=env_dir, conf=Path(exports["SLURM_CONF"]),
                               partition=exports.get("PCBENCH_MN_PARTITION", "debug"),
                               accounting=exports.get("PCBENCH_MN_ACCOUNTING", "0") == "1", env=env,
                               nodes=exports["PCBENCH_MN_NODELIST"].split(), ips=exports["PCBENCH_MN_IPS"].split())
    try:
        states = cluster.cmd("sinfo", "-h", "-N", "-p", cluster.partition, "-o", "%N %t", timeout=15).split("\n")
    except Exception as exc:  # noqa: BLE001 - report any failure to reach slurmctld
        pytest.fail(f"2-node cluster in {env_dir} does not answer ({exc}); rerun tests/slurm/start-multinode.sh",
                    pytrace=False)
    if len([s for s in states if s.strip()]) < 2:
        pytest.fail(f"the cluster in {env_dir} has fewer than 2 nodes (sinfo: {states})", pytrace=False)
    left = cluster.cancel_all()  # jobs from an earlier session (its state kept in env_dir) are not this one's
    if left:
        print(f"2-node cluster: cancelled jobs an earlier session left: {left}")
    try:
        yield cluster
    finally:
        if started_here:
            subprocess.run(["bash", str(HERE / "stop-multinode.sh")], env=env, capture_output=True, timeout=120)

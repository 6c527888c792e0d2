"""A verl run that hangs is killed, with the stage it hung in named.

verl's driver can wait forever when a Ray worker dies (a vLLM worker failing during weight
sync, a TransferQueue storage unit that never answers). So the entry runs verl in a child
process in its own session, and the pieces of the run write a heartbeat file into the run
folder (`heartbeat.json`: stage, step, unix time) whenever they make progress: the launcher
before Ray starts, the pcbench trainer at each stage of a step and whenever more prompt
groups finish generating. When the heartbeat is older than `backend.watchdog_s`, the entry
kills the child's whole process tree (Ray's GCS/raylet/workers and vLLM's engine included:
every process of the child's session, and every descendant) and says which stage hung.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HEARTBEAT = "heartbeat.json"


class Heartbeat:
    """Writes <run_dir>/heartbeat.json; a no-op without a run folder."""

    def __init__(self, run_dir: str | Path | None):
        self.path = Path(run_dir) / HEARTBEAT if run_dir else None
        self.stage = ""

    def beat(self, stage: str | None = None) -> None:
        if self.path is None:
            return
        self.stage = stage or self.stage
        tmp = self.path.with_name(f".{HEARTBEAT}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"stage": self.stage, "time": time.time(), "pid": os.getpid()}))
        os.replace(tmp, self.path)


def read_heartbeat(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


# -- process trees ---------------------------------------------------------------------------
def _processes() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, session id), from /proc."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp session
        out[int(entry)] = (int(fields[1]), int(fields[3]))
    return out


def tree(pid: int, sessions: set[int] = frozenset()) -> set[int]:
    """`pid`, its descendants, and every process in their sessions or in `sessions` (orphans
    that Ray or vLLM left behind keep the session), never this process's own session."""
    procs = _processes()
    own = os.getsid(0)
    found = {pid} if pid in procs else set()
    changed = True
    while changed:
        changed = False
        for p, (ppid, _sid) in procs.items():
            if ppid in found and p not in found:
                found.add(p)
                changed = True
    sids = ({procs[p][1] for p in found} | set(sessions)) - {own, 0}
    found |= {p for p, (_pp, sid) in procs.items() if sid in sids}
    found.discard(os.getpid())
    return found


def kill_tree(pid: int, sessions: set[int] = frozenset(), grace_s: float = 10.0) -> int:
    """SIGTERM the tree, SIGKILL what is left after `grace_s`. Returns how many were signalled."""
    victims = tree(pid, sessions)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in victims:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline and any(_alive(p) for p in victims):
            time.sleep(0.2)
        victims = {p for p in victims if _alive(p)} | (tree(pid, sessions) if sig == signal.SIGTERM else set())
        if not victims:
            break
    return len(victims)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


# -- supervising the verl child ------------------------------------------------------------------
def supervise(cmd: list[str], heartbeat: Path, watchdog_s: float, env: dict | None = None,
              poll_s: float = 2.0, check=None) -> int:
    """Run `cmd` in its own session; kill its tree when the heartbeat is stale. Returns its exit
    code, or 3 after a watchdog kill (the message says which stage hung). `check()`, called every
    poll, returns None or a reason to stop at once (a lost node: cluster.py); then the tree is
    killed and 4 returned."""
    start = time.time()
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)

    def forward(signum, _frame):  # Ctrl-C / scancel / a test's kill reach the whole verl tree
        kill_tree(proc.pid, {proc.pid})
        sys.exit(128 + signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while proc.poll() is None:
            time.sleep(poll_s)
            beat = read_heartbeat(heartbeat)
            reason = check() if check is not None and proc.poll() is None else None
            if reason is not None:
                kill_tree(proc.pid, {proc.pid})
                print(f"pcbench: {reason} in stage '{beat.get('stage') or 'start'}'; verl killed; the run folder "
                      f"keeps its last checkpoint: rerun the same command to resume", file=sys.stderr, flush=True)
                return 4
            last = max(start, float(beat.get("time", 0.0)))
            if watchdog_s > 0 and time.time() - last > watchdog_s and proc.poll() is None:
                kill_tree(proc.pid, {proc.pid})
                stage = beat.get("stage") or "start"
                print(f"pcbench: verl hung in stage '{stage}' (no progress for {watchdog_s:.0f} s); killed; "
                      f"rerun the same command to resume", file=sys.stderr, flush=True)
                return 3
        return proc.returncode
    finally:
        kill_tree(proc.pid, {proc.pid}, grace_s=5.0)  # Ray/vLLM processes the run left behind
        for s, handler in old.items():
            signal.signal(s, handler)

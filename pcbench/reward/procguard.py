"""Run math-verify (off the main thread) and every other reward (always) in worker processes.

verl calls the reward function from a thread pool (``loop.run_in_executor``), where
``signal`` cannot be used, and a thread cannot be killed. So each call is sent to a
small pool of persistent worker processes. A worker runs ``verify_in_main_thread`` in its
own main thread (soft deadline, the normal case); the caller additionally waits at most
``timeout_s + grace_s`` for the reply and otherwise kills the worker (hard bound, for C
code that no signal interrupts) and starts a replacement in the background. A reward other
than the built-in math one (pcbench/reward/registry.py) always runs here, whatever the thread:
its code is the user's, so only a process that can be killed bounds its time.

Workers are plain ``subprocess`` children speaking JSON lines over stdin/stdout, not
``multiprocessing`` ones: spawn/forkserver would re-import the caller's ``__main__`` in
every worker (and fork is unsafe in a threaded process). Time spent starting a worker
(importing sympy, about 1 s) is never charged to a call's timeout.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from .verifier import Verdict

_BOOT = (
    "import sys, json; sys.path[:0] = json.loads(sys.argv[1]); "
    "from pcbench.reward.procguard import worker_main; worker_main()"
)


def worker_main() -> None:
    """Worker loop: one JSON request per stdin line, one JSON reply per stdout line."""
    import signal

    from .verifier import prepare, verify_in_main_thread

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent to handle
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # stray prints from libraries must not corrupt the protocol
    prepare()
    proto.write('"ready"\n')
    proto.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if isinstance(request, dict):  # a named reward's call (registry.guarded_score); a dict, so no
            from .registry import run_in_worker  # answer text can be mistaken for the request kind

            reply = run_in_worker(**request)
        else:  # [pred, gold, timeout_s]: the math verifier's math-verify stage
            reply = list(verify_in_main_thread(*request))
        proto.write(json.dumps(reply) + "\n")
        proto.flush()


def _child_sys_path() -> list[str]:
    """The parent's import path, absolute, with this package's root first: a relative
    entry ("" or ".") would otherwise resolve against a cwd the caller may have changed."""
    root = str(Path(__file__).resolve().parents[2])
    return [root] + [os.path.abspath(p) for p in sys.path]


class _Worker:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, json.dumps(_child_sys_path())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        self._buf = b""
        self.ready = False

    def read_line(self, timeout: float) -> bytes | None:
        """One reply line, or None after ``timeout`` seconds or if the worker died."""
        end = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self._buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None  # EOF: the worker exited
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def wait_ready(self, timeout: float) -> bool:
        if not self.ready:
            self.ready = self.read_line(timeout) == b'"ready"'
        return self.ready

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()  # type: ignore[union-attr]
            except OSError:  # BrokenPipeError: a request still buffered for a worker that died
                pass


class ProcessGuard:
    """A pool of up to ``max_workers`` verifier processes, started on demand.

    Thread-safe. Concurrent callers beyond ``max_workers`` wait for a free worker; that
    wait is bounded (each busy worker answers or is killed within its own bound) and is
    not charged to the waiting call's timeout.
    """

    def __init__(
        self, max_workers: int | None = None, grace_s: float = 0.5, startup_timeout_s: float = 120.0
    ) -> None:
        self.max_workers = max_workers or max(1, min(4, os.cpu_count() or 1))
        self.grace_s = grace_s
        self.startup_timeout_s = startup_timeout_s
        self._slots = threading.BoundedSemaphore(self.max_workers)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []
        self.restarts = 0

    def _checkout(self) -> _Worker:
        self._slots.acquire()
        with self._lock:
            if self._idle:
                return self._idle.pop()
            worker = _Worker()
            self._all.append(worker)
            return worker

    def _checkin(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)
        self._slots.release()

    def _replace(self, worker: _Worker) -> None:
        """Kill a stuck or dead worker; start its replacement now so it warms up while
        the caller carries on."""
        worker.kill()
        with self._lock:
            self._all.remove(worker)
            fresh = _Worker()
            self._all.append(fresh)
            self._idle.append(fresh)
            self.restarts += 1
        self._slots.release()

    def verify(self, pred: str, gold: str, timeout_s: float) -> Verdict:
        """Verdict of ``verify_in_main_thread`` run in a worker, bounded by
        ``timeout_s + grace_s`` of wall-clock time once a worker is ready."""
        reply = self.call([pred, gold, timeout_s], timeout_s)
        if reply is None:  # stuck past the hard bound, or died mid-call
            return Verdict(False, True, False)
        acc, timed_out, parse_failed = reply
        return Verdict(bool(acc), bool(timed_out), bool(parse_failed))

    def call(self, request: list | dict, timeout_s: float):
        """The worker's JSON reply to `request`, or None when it did not answer within
        ``timeout_s + grace_s`` (the worker is then killed and replaced)."""
        data = (json.dumps(request) + "\n").encode()
        for attempt in range(2):
            worker = self._checkout()
            try:
                if not worker.wait_ready(self.startup_timeout_s):
                    raise RuntimeError("reward guard worker failed to start (see its stderr)")
                worker.proc.stdin.write(data)  # type: ignore[union-attr]
                worker.proc.stdin.flush()  # type: ignore[union-attr]
            except BrokenPipeError:
                self._replace(worker)  # died while idle (OOM killer, ...): retry once
                if attempt == 0:
                    continue
                raise
            except BaseException:
                self._replace(worker)
                raise
            line = worker.read_line(timeout_s + self.grace_s)
            if line is None:
                self._replace(worker)
                return None
            self._checkin(worker)
            return json.loads(line)
        raise AssertionError("unreachable")

    def pids(self) -> list[int]:
        with self._lock:
            return [w.proc.pid for w in self._all]

    def shutdown(self) -> None:
        with self._lock:
            workers, self._all, self._idle = self._all, [], []
        for worker in workers:
            worker.kill()


_default: ProcessGuard | None = None
_default_pid = 0
_default_lock = threading.Lock()


def default_guard() -> ProcessGuard:
    """The process-wide guard, created on first use and shut down at exit.

    A forked child (a DataLoader worker, say) must not share its parent's worker pipes,
    so a new guard is made when the PID changes; the parent's workers are left alone.
    """
    global _default, _default_pid
    with _default_lock:
        if _default is None or _default_pid != os.getpid():
            _default, _default_pid = ProcessGuard(), os.getpid()
            atexit.register(_default.shutdown)
        return _default


def guard_worker_pids() -> list[int]:
    """PIDs of the default guard's workers (empty if it was never started)."""
    return [] if _default is None or _default_pid != os.getpid() else _default.pids()

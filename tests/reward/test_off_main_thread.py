"""Off the main thread (how verl calls reward functions) the process guard is used."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from pcbench.reward import ProcessGuard, RewardResult, compute_score, guard_worker_pids


def _in_thread(fn, *args, **kwargs):
    out: dict = {}

    def _target() -> None:
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as err:  # surfaced in the main thread below
            out["error"] = err

    thread = threading.Thread(target=_target)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "worker thread hung"
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_compute_score_in_a_thread_uses_the_guard(stats, child_pids) -> None:
    result = _in_thread(compute_score, r"\boxed{\frac{\pi}{2}}", r"\pi/2", stats=stats)
    assert result.acc and result.score == 1.0
    assert guard_worker_pids(), "the symbolic comparison should have gone to a worker"
    children = child_pids()
    if children is not None:
        assert set(guard_worker_pids()) <= children


def test_thread_timeout_is_respected(stats, reply_waits) -> None:
    _in_thread(compute_score, r"\boxed{x+1}", "1+x", stats=stats)  # worker ready and warm
    reply_waits.clear()
    response = r"\boxed{x^4+4x^3+6x^2+4x+1}"
    result = _in_thread(compute_score, response, r"(x+1)^4", timeout_s=0.001, stats=stats)
    assert result.timed_out and result.score == -1.0
    # one reply wait, bounded by timeout + the guard's grace (0.5 s); either the worker's own
    # alarm answered "timed out" in time or the wait expired and the worker was killed
    assert len(reply_waits) == 1 and reply_waits[0][0] == pytest.approx(0.001 + 0.5), reply_waits
    assert stats.snapshot()["timeouts"] == 1


def test_concurrent_threads_agree_with_main_thread(stats) -> None:
    cases = [(r"\boxed{\sqrt{8}}", r"2\sqrt{2}", True), (r"\boxed{\{3,1\}}", r"\{1,3\}", True),
             (r"\boxed{x^2}", "x^3", False), (r"\boxed{0.5}", r"\frac12", True)] * 3
    results: list[RewardResult | None] = [None] * len(cases)

    def work(i: int) -> None:
        response, gold, _ = cases[i]
        results[i] = compute_score(response, gold, stats=stats)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert [r.acc for r in results] == [c[2] for c in cases]  # type: ignore[union-attr]


def test_stuck_worker_is_killed_and_replaced(reply_waits) -> None:
    """A worker that never answers (here: SIGSTOPped, like C code no signal interrupts)
    is killed at timeout + grace and a fresh worker serves the next call."""
    guard = ProcessGuard(max_workers=1, grace_s=0.2)
    try:
        assert _in_thread(guard.verify, "x+1", "1+x", 1.0).acc
        (stuck_pid,) = guard.pids()
        os.kill(stuck_pid, signal.SIGSTOP)
        reply_waits.clear()
        verdict = _in_thread(guard.verify, "x+2", "2+x", 0.3)
        assert verdict.timed_out and not verdict.acc
        assert reply_waits == [(pytest.approx(0.3 + 0.2), True)]  # one bounded wait, expired: then the kill
        assert guard.restarts == 1 and guard.pids() != [stuck_pid]
        assert _in_thread(guard.verify, "x+3", "3+x", 1.0).acc
    finally:
        guard.shutdown()
    with pytest.raises(ProcessLookupError):
        os.kill(stuck_pid, 0)


def test_a_worker_that_died_while_idle_is_replaced_and_the_call_retried() -> None:
    """An idle worker killed from outside (the OOM killer, a test killing a process group) leaves
    a broken pipe: the next call replaces it and is answered, instead of raising BrokenPipeError
    (it did, from closing the dead worker's pipe with the request still buffered)."""
    guard = ProcessGuard(max_workers=1)
    try:
        assert _in_thread(guard.verify, "x+1", "1+x", 1.0).acc
        (dead,) = guard.pids()
        os.kill(dead, signal.SIGKILL)
        os.waitpid(dead, 0)
        assert _in_thread(guard.verify, "x+2", "2+x", 1.0).acc
        assert guard.restarts == 1 and guard.pids() != [dead]
    finally:
        guard.shutdown()

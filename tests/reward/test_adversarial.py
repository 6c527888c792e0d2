"""Adversarial corpus: every call returns a RewardResult quickly, touches no files,
starts no processes, and scores insane answers -1 (sane answers inside still count).

The time bound is a hang detector, not a benchmark: it is generous on purpose.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from pcbench.reward import RewardResult, compute_score, guard_worker_pids

BOUND_S = 5.0
TMP_MARKER = Path("/tmp/pcbench_reward_pwned")
BIG_INT = "7" * 9_000  # under the 10k box cap: exact, no int() conversion needed


def boxed(content: str) -> str:
    return "The final answer is $\\boxed{" + content + "}$."


# (id, response, gold, expected score); None means "either score, as long as it is bounded"
CORPUS = [
    ("tower-9^9^9^9", boxed("9^9^9^9"), "5", -1.0),
    ("tower-braced", boxed("9^{9^{9^{9}}}"), "5", -1.0),
    ("googolplex", boxed("10^{10^{100}}"), "5", -1.0),
    ("tiny-googolplex", boxed("10^{-10^{9}}"), "0", -1.0),
    ("symbolic-base-tower", boxed("x^{9^{9^{9}}}"), "x", -1.0),
    ("power-of-two-tower", boxed("2^{2^{2^{2^{2^{2}}}}}"), "2", -1.0),
    ("sum-to-10^10", boxed("\\sum_{k=1}^{10^{10}} k"), "5", -1.0),
    ("factorial-tower", boxed("((10!)!)!"), "5", -1.0),
    ("big-factorial", boxed("100000!"), "5", -1.0),
    ("huge-binomial", boxed("\\binom{10^{12}}{10^{6}}"), "5", -1.0),
    ("100k-digit-int", boxed("9" * 100_000), "9" * 100_000, -1.0),  # over the box cap
    ("9k-digit-int-sane", boxed(BIG_INT), BIG_INT, 1.0),
    ("9k-digit-int-off-by-one", boxed(BIG_INT[:-1] + "8"), BIG_INT, -1.0),
    ("nested-braces-5000", boxed("{" * 5000 + "1" + "}" * 5000), "1", -1.0),
    ("nested-braces-4000", boxed("{" * 4000 + "1" + "}" * 4000), "1", -1.0),
    ("nested-parens-3000", boxed("(" * 3000 + "1" + ")" * 3000), "1", -1.0),
    ("nested-frac-5000", boxed("\\frac{1}{" * 5000 + "2" + "}" * 5000), "1", -1.0),
    ("chained-frac-1600", boxed("\\frac1" * 1600 + "2"), "1", -1.0),
    ("1MB-prose-no-box", "lorem ipsum " * 90_000, "5", -1.0),
    ("1MB-prose-then-box-sane", "lorem ipsum " * 90_000 + boxed("7"), "7", 1.0),
    ("1MB-box", boxed("1+" * 500_000 + "1"), "500001", -1.0),
    ("100k-boxes-last-counts", boxed("1") * 100_000 + boxed("2"), "2", 1.0),
    ("fullwidth-digits", boxed("\uff11\uff12"), "12", -1.0),
    ("cyrillic-x", boxed("\u0445+1"), "x+1", -1.0),
    ("cyrillic-o-for-zero", boxed("1\u041e"), "10", -1.0),
    ("latex-input", boxed("\\input{/etc/passwd}"), "5", -1.0),
    ("latex-write18", boxed(f"\\write18{{touch {TMP_MARKER}}}"), "5", -1.0),
    ("latex-immediate-write18", boxed("\\immediate\\write18{touch PWNED}"), "5", -1.0),
    ("latex-def-loop", boxed("\\def\\x{\\x}\\x"), "5", -1.0),
    ("py-import-system", boxed("__import__('os').system('touch PWNED')"), "0", -1.0),
    ("py-eval", boxed("eval(\"__import__('os').system('touch PWNED')\")"), "0", -1.0),
    ("py-exec", boxed("exec('open(\"PWNED\",\"w\")')"), "0", -1.0),
    ("py-open", boxed("open('x','w').write('1')"), "1", -1.0),
    ("py-lambda-bomb", boxed("(lambda: [1]*10**10)()"), "0", -1.0),
    ("unbalanced-open", "so the answer is \\boxed{", "5", -1.0),
    ("unbalanced-many", boxed("1") + "\\boxed{" + "{" * 1000, "1", -1.0),
    ("null-byte-inside", boxed("1\x002"), "12", -1.0),
    ("null-byte-outside-sane", "\x00\x00" + boxed("5") + "\x00", "5", 1.0),
    ("lone-surrogate", boxed("\ud800"), "5", -1.0),
    ("only-whitespace", " \n\t \r\n ", "5", -1.0),
    ("whitespace-box", boxed(" \n\t "), "5", -1.0),
    ("division-by-zero", boxed("\\frac{1}{0}"), "0", -1.0),
    ("long-sum-bounded", boxed("+".join(["1"] * 3000)), "3000", None),
    ("minus-chain-timeout", boxed("-" * 5000 + "1"), "1", None),
    ("ln-chain-timeout", boxed("\\ln" * 1600), "1", -1.0),
    ("sin-chain-timeout", boxed("\\sin" * 1200 + "x"), "0", -1.0),
    ("sane-big-power", boxed("2^{100}"), str(2**100), 1.0),
]


def _marker_files(cwd: Path) -> list[Path]:
    found = [p for p in (TMP_MARKER, Path("/tmp/PWNED")) if p.exists()]
    return found + sorted(cwd.iterdir())


def test_corpus_size() -> None:
    assert len(CORPUS) >= 25


@pytest.mark.parametrize("case_id,response,gold,expected", CORPUS, ids=[c[0] for c in CORPUS])
def test_adversarial_case(case_id, response, gold, expected, stats, in_tmp_cwd, child_pids) -> None:
    before = child_pids()
    # CPU seconds of this process, not wall time: other work on the machine cannot move it, while a
    # parser or regex that never returns (the hang this guards against) runs up the count
    start = time.process_time()
    result = compute_score(response, gold, stats=stats)
    spent = time.process_time() - start
    assert isinstance(result, RewardResult)
    assert spent < BOUND_S, f"{case_id} used {spent:.2f} CPU s"
    if expected is None:
        assert result.score in (1.0, -1.0)
    else:
        assert result.score == expected, result
        assert result.acc == (expected == 1.0)
    assert result.pred is None or len(result.pred) <= 10_000
    assert _marker_files(in_tmp_cwd) == []
    after = child_pids()
    if after is not None:
        # the main thread never needs a worker; whatever exists must be ours
        assert after - before <= set(guard_worker_pids())
    assert os.getcwd() == str(in_tmp_cwd)


def _in_thread(fn, bound_s: float):
    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join(timeout=bound_s)
    assert out, f"the call raised or outlived the guard's own worst case ({bound_s:.0f} s)"
    return out[0]


def test_adversarial_corpus_in_a_thread(stats, in_tmp_cwd, child_pids, reply_waits) -> None:
    """The same corpus through the process guard (the path verl takes). No wall-clock bound of the
    test's own: on a loaded machine a worker restarted after a timeout spends seconds importing
    sympy before the next call (once 5.47 s against a former 5 s bound), and that start is, by
    design, not charged to any call. What is checked instead is the bound the code sets: every
    wait for a reply is at most timeout_s + grace_s, every restart follows a reply wait that
    expired, and a call that outlives the guard's own worst case (a worker start plus two
    bounded waits) counts as a hang."""
    from pcbench.reward import procguard

    guard = procguard.default_guard()
    waits = reply_waits  # (bound asked for, expired) of each reply wait
    worst = guard.startup_timeout_s + 2 * (1.0 + guard.grace_s)  # compute_score's timeout_s is 1.0
    before, restarts = child_pids(), guard.restarts
    for case_id, response, gold, expected in CORPUS:
        result = _in_thread(lambda: compute_score(response, gold, stats=stats), worst)
        if expected is not None:
            assert result.score == expected, (case_id, result)
    assert waits and all(bound <= 1.0 + guard.grace_s for bound, _ in waits), waits
    assert guard.restarts - restarts <= sum(expired for _, expired in waits)
    assert _marker_files(in_tmp_cwd) == []
    after = child_pids()
    if after is not None:
        assert after - before <= set(guard_worker_pids())

"""Correctness set: equivalent answers must match, near misses must not.

Each case is (response, ground truth, expected acc). Responses are full model outputs
with the answer in a box, as the prompts ask.
"""

from __future__ import annotations

import pytest

from pcbench.reward import RewardResult, compute_score, compute_score_batch

MATCH = [
    # plain numbers and fractions (fast path)
    (r"The answer is $\boxed{42}$.", "42"),
    (r"\boxed{0.5}", r"\frac{1}{2}"),
    (r"\boxed{\frac{1}{2}}", "0.5"),
    (r"\boxed{\dfrac{1}{2}}", "1/2"),
    (r"\boxed{\tfrac{3}{4}}", "0.75"),
    (r"\boxed{\frac12}", r"\frac{1}{2}"),
    (r"\boxed{1/2}", r"\dfrac{1}{2}"),
    (r"\boxed{.5}", "0.50"),
    (r"\boxed{-3}", "-3"),
    (r"\boxed{-\frac{2}{3}}", r"\frac{-2}{3}"),
    (r"\boxed{\frac{4}{8}}", "1/2"),
    (r"\boxed{007}", "7"),
    (r"\boxed{1,000}", "1000"),
    (r"\boxed{1{,}000{,}000}", "1000000"),
    (r"\boxed{5\text{ cm}}", "5"),
    (r"\boxed{\text{Answer: } 12}", "12"),
    (r"\boxed{30^\circ}", "30"),
    (r"\boxed{50\%}", "50"),
    (r"\boxed{ 8 }.", "8"),
    (r"\boxed{$9$}", "9"),
    (r"\boxed{3\!}", "3"),
    (r"\boxed{10.}", "10"),
    (r"\boxed{2}", r"\boxed{2}"),  # a boxed gold answer is unboxed
    # the last box counts
    (r"First \boxed{3}, but rechecking, \boxed{4}.", "4"),
    (r"\fbox{11}", "11"),
    (r"so $\boxed 6$", "6"),
    # symbolic (math-verify)
    (r"\boxed{\frac{\pi}{2}}", r"\pi/2"),
    (r"\boxed{\frac{\sqrt{2}}{2}}", r"\frac{1}{\sqrt{2}}"),
    (r"\boxed{2\sqrt{3}}", r"\sqrt{12}"),
    (r"\boxed{\{2, 1\}}", r"\{1, 2\}"),
    (r"\boxed{(0, 1]}", r"(0,1]"),
    (r"\boxed{[-1, \infty)}", r"[-1,\infty)"),
    (r"\boxed{x^2+2x+1}", r"(x+1)^2"),
    (r"\boxed{x = 3}", "3"),
    (r"\boxed{\pi r^2}", r"r^2\pi"),
    (r"\boxed{e^{x^2}}", r"e^{x^{2}}"),
    (r"\boxed{\left(\frac{1}{2}\right)^{2}}", r"\frac{1}{4}"),
    (r"\boxed{2^{10}}", "1024"),
    (r"\boxed{\binom{5}{2}}", "10"),
    (r"\boxed{5!}", "120"),
    (r"\boxed{\text{(B)}}", "B"),
    (r"\boxed{\infty}", r"\infty"),
]

NO_MATCH = [
    (r"\boxed{0.51}", r"\frac{1}{2}"),
    (r"\boxed{0.333}", r"\frac{1}{3}"),
    (r"\boxed{41}", "42"),
    (r"\boxed{43}", "42"),
    (r"\boxed{-42}", "42"),
    (r"\boxed{\frac{1}{2}}", r"-\frac{1}{2}"),
    (r"\boxed{2/1}", "1/2"),
    ("The answer is 42.", "42"),  # no box
    (r"\boxed{}", "42"),  # empty box
    (r"\boxed{42} no wait \boxed{41}", "42"),  # the last box counts
    (r"\boxed{5\text{ or }6}", "56"),  # text inside is not stripped
    (r"\boxed{1 2}", "12"),
    (r"\boxed{\{1, 2\}}", r"\{1, 3\}"),
    (r"\boxed{[0, 1)}", r"(0,1]"),
    (r"\boxed{\frac{\pi}{3}}", r"\pi/2"),
    (r"\boxed{x^2+1}", r"(x+1)^2"),
    (r"\boxed{1/0}", "0"),
    (r"\boxed{\frac{1}{2}", r"\frac{1}{2}"),  # unclosed box
]


@pytest.mark.parametrize("response,gold", MATCH)
def test_equivalent_answers_match(response: str, gold: str, stats) -> None:
    result = compute_score(response, gold, stats=stats)
    assert (result.acc, result.score) == (True, 1.0), result
    assert not result.timed_out


@pytest.mark.parametrize("response,gold", NO_MATCH)
def test_near_misses_do_not_match(response: str, gold: str, stats) -> None:
    result = compute_score(response, gold, stats=stats)
    assert (result.acc, result.score) == (False, -1.0), result
    assert not result.timed_out


def test_case_counts() -> None:
    assert len(MATCH) + len(NO_MATCH) >= 40


def test_result_fields_and_stats(stats) -> None:
    fast = compute_score(r"\boxed{\frac{1}{2}}", "0.5", stats=stats)
    assert fast == RewardResult(score=1.0, acc=True, pred=r"\frac{1}{2}", timed_out=False, parse_failed=False)
    missing = compute_score("no box", "1", stats=stats)
    assert missing.pred is None and missing.parse_failed
    compute_score(r"\boxed{\frac{\pi}{2}}", r"\pi/2", stats=stats)
    snap = stats.snapshot("reward/")
    assert snap == {
        "reward/calls": 3,
        "reward/timeouts": 0,
        "reward/parse_failures": 1,
        "reward/fast_path_hits": 1,
        "reward/rejected": 0,
    }
    stats.reset()
    assert set(stats.snapshot().values()) == {0}


def test_batch_matches_single_calls(stats) -> None:
    responses = [r[0] for r in MATCH[:5] + NO_MATCH[:5]]
    golds = [r[1] for r in MATCH[:5] + NO_MATCH[:5]]
    batch = compute_score_batch(responses, golds, stats=stats)
    assert [r.acc for r in batch] == [True] * 5 + [False] * 5
    with pytest.raises(ValueError, match="ground truths"):
        compute_score_batch(responses, golds[:-1])


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        compute_score(r"\boxed{1}", "1", timeout_s=0)


def test_main_thread_timeout_is_counted(stats) -> None:
    # A symbolic comparison that takes tens of ms cannot finish in 1 ms.
    result = compute_score(r"\boxed{x^3+3x^2+3x+1}", r"(x+1)^3", timeout_s=0.001, stats=stats)
    assert result.timed_out and result.score == -1.0
    assert stats.snapshot()["timeouts"] == 1

"""ScoreMemo: repeats answered from memory give what scoring each response gives, counters included."""

from pcbench.reward import RewardStats, compute_score
from pcbench.reward.memo import ScoreMemo

RESPONSES = ["\\boxed{46}", "\\boxed{46}", "\\boxed{47}", "no box", "\\boxed{46}", "no box", "\\boxed{4+6}",
             "\\boxed{4+6}", "\\boxed{2*23}", "\\boxed{046}", "\\boxed{46}"]


def test_memo_scores_and_counts_every_response_as_scoring_it_does():
    plain, memo_stats = RewardStats(), RewardStats()
    memo = ScoreMemo(memo_stats)
    for answer in ("46", "10"):
        for r in RESPONSES:
            assert memo.score(r, answer) == compute_score(r, answer, stats=plain)
    assert memo_stats.snapshot() == plain.snapshot()
    assert plain.fast_path_hits and plain.parse_failures and plain.calls == 2 * len(RESPONSES)
    assert len(memo.seen) == 2 * len(set(RESPONSES))  # each distinct pair scored once


def test_a_timed_out_verdict_is_not_remembered(monkeypatch):
    from pcbench.reward import memo as memo_mod
    from pcbench.reward.math_reward import RewardResult

    calls = []

    def slow(response, answer, stats):
        calls.append(response)
        result = RewardResult(-1.0, False, "x", timed_out=True)
        stats.record(result)
        return result

    monkeypatch.setattr(memo_mod, "compute_score", slow)
    stats = RewardStats()
    m = ScoreMemo(stats)
    m.score("\\boxed{x}", "1")
    m.score("\\boxed{x}", "1")
    assert len(calls) == 2 and not m.seen and stats.calls == 2 and stats.timeouts == 2


def test_a_full_memo_drops_its_oldest_half():
    m = ScoreMemo(RewardStats(), size=4)
    for i in range(5):
        m.score(f"\\boxed{{{i}}}", "3")
    assert list(m.seen) == [("\\boxed{2}", "3"), ("\\boxed{3}", "3"), ("\\boxed{4}", "3")]

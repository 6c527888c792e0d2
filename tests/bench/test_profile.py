"""The profile's phase clock: nested phases are not counted twice, an evaluation keeps its sampling."""

from types import SimpleNamespace

import pytest

from pcbench.bench import profile
from pcbench.bench.profile import PHASES, _Clock
from pcbench.reports.profile import profile_md as render


class FakeTime:
    """The clock _Clock reads, advanced only by `busy`: the phases' times are exact, whatever the
    machine's load (no wall-clock bound in a test)."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    process_time = perf_counter

    def busy(self, seconds: float) -> None:
        self.now += seconds


def test_inner_phases_are_subtracted_and_exclusive_phases_keep_what_they_call(monkeypatch):
    fake = FakeTime()
    monkeypatch.setattr(profile, "time", fake)
    clock = _Clock()
    ns = SimpleNamespace(sample=lambda: fake.busy(0.05))
    ns.generate = lambda: (fake.busy(0.02), ns.sample())
    ns.evaluate = lambda: (fake.busy(0.01), ns.generate())
    clock.wrap(ns, "sample", "generation")
    clock.wrap(ns, "generate", "reward", inner=("generation",))
    clock.wrap(ns, "evaluate", "evaluation", exclusive=True)
    ns.generate()
    gen, reward = clock.wall["generation"], clock.wall["reward"]
    assert (gen, reward) == pytest.approx((0.05, 0.02))  # generate's own time only, its sampler apart
    ns.evaluate()  # its sampling is evaluation time, not generation or reward
    assert (clock.wall["generation"], clock.wall["reward"]) == (gen, reward)
    assert clock.wall["evaluation"] == pytest.approx(0.08)


def test_render_lists_every_job_and_phase():
    job = {"method": "grpo", "n": 32, "wall": {p: 1.0 for p in PHASES}, "cpu": {p: 0.5 for p in PHASES},
           "total_wall": 7.0, "total_cpu": 3.5, "imports_wall": 0.4, "imports_cpu": 0.3}
    meta = {"command": "python -m pcbench.bench profile", "commit": "abc", "dirty_files": [], "date_utc": "now",
            "cpu": "cpu", "cpus": 2, "torch": "t", "transformers": "tf", "python": "3", "loadavg_start": [0, 0, 0]}
    md = render({"provenance": meta, "steps": 8, "phases": list(PHASES), "jobs": [job]})
    assert "| grpo n=32 | 1.00 (0.50) |" in md and "evaluation 14%" in md

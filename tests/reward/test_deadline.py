"""The main-thread deadline of the math-verify stage: a Deadline that library code swallows (raised
inside a __del__) never reaches the process's unraisable hook (a test runner's hook formats it, and a
re-fire landing there escaped from the hook and crashed an xdist worker), the re-fire still ends the
call, and the hook is the caller's again afterwards."""

import sys
import time

import pytest

from pcbench.reward.verifier import Deadline, deadline


def test_a_swallowed_deadline_skips_the_unraisable_hook_and_the_refire_ends_the_call(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(type(unraisable.exc_value)))
    hook = sys.unraisablehook

    class SlowToDie:
        def __del__(self):
            time.sleep(0.3)  # the deadline fires here: Python reports it to the hook and goes on

    with pytest.raises(Deadline):
        with deadline(0.05):
            doomed = SlowToDie()
            del doomed
            time.sleep(2)  # the re-fire lands here (without it the sleep ends and no Deadline is raised)
    assert seen == [] and sys.unraisablehook is hook

"""The line at the top of a committed report says which warm start its numbers come from."""

from pcbench import numerics
from pcbench.analysis.warmstart_note import warmstart_notice


def _today():
    return numerics.reference()["warmstart"]["digest"]


def test_todays_default_alone_is_named_as_such():
    line = warmstart_notice({"warmstart_digests": [_today()]})
    assert "today's default" in line and "differs" not in line


def test_a_grid_selected_warm_start_beside_todays_default_is_named_not_flagged():
    line = warmstart_notice({"warmstart_digests": sorted([_today(), "b6edfbc27591d93a"])})
    assert "b6edfbc27591d93a" in line and "differs" not in line


def test_a_report_without_todays_default_says_it_differs():
    line = warmstart_notice({"warmstart_digests": ["0123456789abcdef", "b6edfbc27591d93a"]})
    assert line.startswith("**Measured from warm start(s) `0123456789abcdef`") and "differs" in line
    assert "digest was not recorded" in warmstart_notice(None)

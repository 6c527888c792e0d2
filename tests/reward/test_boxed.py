"""extract_last_boxed: the last box wins, braces are matched, no box means None."""

from __future__ import annotations

import time

import pytest

from pcbench.reward import extract_last_boxed
from pcbench.reward.boxed import find_last_boxed

CASES = [
    (r"The answer is \boxed{42}.", "42"),
    (r"\boxed{1} wait, actually \boxed{2}", "2"),
    (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
    (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),
    (r"\boxed{\{1, 2}", r"\{1, 2"),  # escaped braces do not group
    (r"so $\boxed 7$ done", "7"),
    (r"\boxed {5}", "5"),
    (r"\fbox{3}", "3"),
    (r"\boxed{2} then \fbox{3}", "3"),
    (r"\boxed{\text{(A)}}", r"\text{(A)}"),
    (r"\boxed{}", ""),
    (r"\boxed{1} \boxedsymbol", "1"),  # not a box: the previous one counts
    ("no answer here", None),
    (r"\boxed{\frac{1}{2}", None),  # unclosed (truncated response)
    (r"\boxed{1} and then \boxed{", None),  # the last box is unclosed: no answer
    (r"\boxed", None),
]


@pytest.mark.parametrize("text,expected", CASES)
def test_extract_last_boxed(text: str, expected: str | None) -> None:
    assert extract_last_boxed(text) == expected


def test_max_len_caps_the_scan() -> None:
    text = r"\boxed{" + "1" * 50 + "}"
    assert extract_last_boxed(text, max_len=50) == "1" * 50
    assert extract_last_boxed(text, max_len=49) is None
    assert find_last_boxed(text, 49) == ("too_long", None)


def test_linear_time_on_pathological_inputs() -> None:
    # Many macros without a brace, and a megabyte of opening braces: both linear.
    many_macros = r"\boxedx" * 100_000
    braces = r"\boxed" + "{" * 1_000_000
    start = time.process_time()  # CPU time of this process: a loaded machine cannot move it
    assert extract_last_boxed(many_macros) is None
    assert extract_last_boxed(braces) is None
    assert time.process_time() - start < 5.0  # quadratic scanning of 1M braces would take minutes

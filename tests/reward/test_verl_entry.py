"""verl entry point: dict shape, acc semantics, DAPO overlong penalty."""

from __future__ import annotations

import pytest

from pcbench.reward import overlong_penalty, verl_compute_score


def test_dict_shape_correct_and_wrong() -> None:
    right = verl_compute_score("math", r"so \boxed{\frac{1}{2}}", "0.5")
    assert right == {"score": 1.0, "acc": True, "pred": r"\frac{1}{2}"}
    wrong = verl_compute_score("math", "no box at all", "0.5", extra_info={})
    assert wrong == {"score": -1.0, "acc": False, "pred": ""}
    assert all(type(d["score"]) is float and type(d["acc"]) is bool for d in (right, wrong))


def test_unknown_kwargs_are_ignored() -> None:
    out = verl_compute_score("math", r"\boxed{3}", "3", None, reward_router_address=None, timeout_s=2.0)
    assert out["acc"] is True


@pytest.mark.parametrize(
    "length,expected",
    [(0, 0.0), (4096, 0.0), (4097, -1 / 4096), (6144, -0.5), (8191, -4095 / 4096), (8192, -1.0)],
)
def test_overlong_penalty_edges(length: int, expected: float) -> None:
    assert overlong_penalty(length, 8192, 4096, 1.0) == pytest.approx(expected)


def test_overlong_penalty_factor_scales_and_config_is_checked() -> None:
    assert overlong_penalty(8192, 8192, 4096, 0.5) == pytest.approx(-0.5)
    assert overlong_penalty(100, 100, 100, 1.0) == pytest.approx(-1.0)  # all buffer
    with pytest.raises(ValueError, match="buffer_len"):
        overlong_penalty(10, 100, 0, 1.0)
    with pytest.raises(ValueError, match="max_response_length"):
        overlong_penalty(10, 100, 200, 1.0)


CFG = {"max_response_length": 8192, "overlong_buffer_len": 4096, "overlong_penalty_factor": 1.0}


def test_penalty_applied_from_extra_info_and_kwargs() -> None:
    # config in kwargs (verl reward_kwargs), length per sample in extra_info
    out = verl_compute_score("math", r"\boxed{2}", "2", {"response_length": 6144}, **CFG)
    assert out["score"] == pytest.approx(0.5) and out["acc"] is True
    # everything in extra_info; acc stays pure correctness
    out = verl_compute_score("math", r"\boxed{3}", "2", {"response_length": 8192, **CFG})
    assert out["score"] == pytest.approx(-2.0) and out["acc"] is False
    # extra_info overrides kwargs
    info = {"response_length": 8192, "overlong_penalty_factor": 0.5}
    out = verl_compute_score("math", r"\boxed{2}", "2", info, **CFG)
    assert out["score"] == pytest.approx(0.5)


def test_penalty_not_applied_without_length_or_config() -> None:
    assert verl_compute_score("math", r"\boxed{2}", "2", {}, **CFG)["score"] == 1.0
    assert verl_compute_score("math", r"\boxed{2}", "2", {"response_length": 8192})["score"] == 1.0
    zero_buffer = {**CFG, "overlong_buffer_len": 0}
    out = verl_compute_score("math", r"\boxed{2}", "2", {"response_length": 8192}, **zero_buffer)
    assert out["score"] == 1.0

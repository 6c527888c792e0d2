"""pcbench/coreshare.py: the products' thread count follows the other processes' load, and the
products' floats do not depend on it."""

import itertools

import pytest
import torch

from pcbench import coreshare, detmm


def _feed(monkeypatch, machine, own, cores=2):
    """Counters read in turn: machine (busy, total) ticks and own ticks, summed over 2 CPUs."""
    machine = itertools.chain(machine, itertools.repeat(machine[-1]))  # then no time passes
    own = itertools.chain(own, itertools.repeat(own[-1]))
    monkeypatch.setattr(coreshare, "_machine_ticks", lambda: next(machine))
    monkeypatch.setattr(coreshare, "_own_ticks", lambda: next(own))
    monkeypatch.setattr(coreshare, "_allowed_cores", lambda: cores)
    monkeypatch.setattr(coreshare.os, "cpu_count", lambda: cores)
    return coreshare.CoreShare(interval_s=0.0)


@pytest.mark.parametrize("busy, own, want", [
    (200, 200, 2),   # both cores busy, all of it ours: alone
    (200, 100, 1),   # a neighbour took one core
    (130, 100, 2),   # a neighbour using 0.3 of a core: keep both
    (160, 100, 1),   # 0.6 of a core: more than half, give it up
    (200, 0, 1),     # both cores taken by others: still one thread
])
def test_threads_follow_the_other_processes_load(monkeypatch, busy, own, want):
    share = _feed(monkeypatch, [(0, 0), (busy, 200)], [0, own])
    assert share.threads(2) == 2  # no interval measured yet: the cap
    assert share.threads(2) == want
    assert share.threads(1) == 1  # never more than the cap


def test_no_counters_means_the_cap_or_the_allowed_cores(monkeypatch):
    share = _feed(monkeypatch, [None, None], [None, None])
    assert share.threads(2) == 2 and share.threads(2) == 2
    assert share.threads(4) == 2  # never more threads than cores this process may run on


def test_products_are_the_same_floats_at_any_thread_count(monkeypatch):
    if detmm.available() is not None:
        pytest.skip(detmm.available())
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(3, 300, 200, generator=g), torch.randn(3, 200, 150, generator=g)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        coreshare.enable(False)
        two = detmm.bmm(a, b)
        monkeypatch.setattr(coreshare, "threads", lambda cap: 1)  # as under a busy neighbour
        one = detmm.bmm(a, b)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, two)

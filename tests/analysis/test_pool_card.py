"""The pool card (pcbench.pool_card): class boundaries, shares, the tables it renders."""

from __future__ import annotations

import numpy as np
import pytest

from pcbench.pool_card import CLASSES, card_caption, card_md, card_text, labelled_card, pool_card

NAMES = [name for name, *_ in CLASSES]


@pytest.mark.parametrize("rate, cls", [
    (0.0, "never"), (1e-9, "never"), (1e-4, "hard"), (0.1249, "hard"), (0.125, "band"), (0.5, "band"),
    (0.7499, "band"), (0.75, "near_solved"), (0.9899, "near_solved"), (0.99, "solved"), (1.0, "solved"),
])
def test_each_rate_lands_in_its_documented_class(rate, cls):
    card = pool_card([rate], ["t"])
    assert {name: card["t"][name] for name in NAMES} == {name: float(name == cls) for name in NAMES}


def test_shares_sum_to_one_per_tier_with_n_and_mean():
    rng = np.random.default_rng(0)
    rates = np.concatenate([rng.uniform(0, 1, 300), np.zeros(50), np.ones(50)])  # (400,)
    tiers = rng.choice(["add22", "add33", "add44"], size=rates.size)
    card = pool_card(rates, tiers)
    assert list(card) == ["all", "add22", "add33", "add44"]
    for t, row in card.items():
        assert sum(row[name] for name in NAMES) == pytest.approx(1.0, abs=1e-3)  # each share rounded to 4 digits
        r = rates if t == "all" else rates[tiers == t]
        assert row["n"] == r.size and row["mean"] == pytest.approx(r.mean(), abs=1e-4)
    assert sum(card[t]["n"] for t in ("add22", "add33", "add44")) == card["all"]["n"] == 400


@pytest.mark.parametrize("rates, tiers, says", [([], [], "no prompts"), ([0.5, 0.5], ["a"], "must be two")])
def test_bad_input_is_one_line(rates, tiers, says):
    with pytest.raises(ValueError, match=says):
        pool_card(rates, tiers)


def test_the_markdown_table_has_a_row_per_tier_then_the_pool():
    card = pool_card([0.0, 0.1, 0.5, 0.8, 1.0, 1.0], ["add44", "add44", "add33", "add33", "add22", "add22"])
    lines = card_md(card)
    assert lines[0] == "| tier | n | mean | solved | near-solved | band | hard | never |"
    assert lines[1] == "|---|---|---|---|---|---|---|---|"
    assert lines[2:] == ["| add22 | 2 | 1.000 | 100.0% | 0.0% | 0.0% | 0.0% | 0.0% |",
                         "| add33 | 2 | 0.650 | 0.0% | 50.0% | 50.0% | 0.0% | 0.0% |",
                         "| add44 | 2 | 0.050 | 0.0% | 0.0% | 0.0% | 50.0% | 50.0% |",
                         "| pool | 6 | 0.567 | 33.3% | 16.7% | 16.7% | 16.7% | 16.7% |"]
    text = card_text(card)  # the same cells, in aligned columns
    assert [line.split() for line in text] == [[c.strip() for c in line.strip("|").split("|")] for line in lines[:1] + lines[2:]]


def test_a_labelled_card_says_how_its_rates_were_measured():
    assert card_caption(labelled_card([0.5], ["t"], "exact", 1.0, 1.0)) == "pass rates: exact, at T 1, top_p 1"
    card = labelled_card([0.5], ["t"], "sampled, k=8", 0.7, 0.95)
    assert card_caption(card) == "pass rates: sampled, k=8, at T 0.7, top_p 0.95"
    assert card["tiers"] == pool_card([0.5], ["t"])


def test_warmstart_spread_uses_the_same_card():
    from pcbench import pool_card as module
    from pcbench.reports import warmstart_spread

    assert warmstart_spread.pool_card is module.pool_card and warmstart_spread.CLASSES is module.CLASSES


def test_warmstart_spread_designs_are_the_config_choices_and_the_report_describes_each():
    from pcbench.bench.warmstart_spread import DESIGNS
    from pcbench.reports.warmstart_spread import DESIGN_NOTES

    assert set(DESIGNS) == set(DESIGN_NOTES) and "prelude" in DESIGNS

"""Rollouts-to-target scoring with censoring and seeded bootstrap intervals (pure functions).

Definitions (docs/method.md#rollouts-to-target):
- target accuracy of a (model, data) group: the best, over evaluation steps, of the baseline's
  (GRPO's) `val/acc` averaged over its seeds at that step. Only steps that every baseline seed
  evaluated are averaged, so a short seed cannot make the mean of fewer seeds the target.
- rollouts-to-target of one run: `cumulative_rollouts` of its first evaluation line with
  `val/acc >= target` (no interpolation). A run that never gets there is censored: `inf`.
  `>=` allows TOL of float round-off, so a seed that logged exactly the target reaches it.
- per method: the median over seeds with censored runs as `inf`; a median of `inf` means
  "did not reach" and is never reported as a number. A run whose allocator starved (status
  "starved", pcbench.analysis.run_frames.read_stop) is scored on its evaluations up to the stop: a hit
  before it counts, else it is censored like any run that did not get there.
- speedup vs a comparator: comparator median / method median; `None` when either median is
  censored. Intervals: percentile bootstrap (95%) over seeds with `numpy.random.default_rng(seed)`,
  a fresh generator per interval, so an interval does not depend on what else is scored.
  For a speedup the seeds of both methods are resampled independently (resamples where both
  medians are censored are dropped). An interval end that is censored is `None` (unbounded).
  Every interval any table prints (analysis/speedup.py, pcbench.bench) comes from this module.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pcbench.analysis.formats import finite_or_none
from pcbench.analysis.methods import method_order
from pcbench.analysis.run_frames import ACC, SCORED, STARVED, eval_rows

TOL = 1e-9
N_BOOT = 10_000
LEVEL = 0.95
COMPARATORS = ("grpo", "dapo")
GROUP = ["model", "data"]


def target_accuracy(df: pd.DataFrame, baseline: str = "grpo",
                    warnings: list[str] | None = None) -> dict[tuple[str, str], float]:
    """{(model, data): target} for every group where `baseline` has evaluations.

    df: metrics frame (pcbench.analysis.run_frames.load_runs); rows of other methods are ignored.
    """
    evals = eval_rows(df)
    evals = evals[evals["method"] == baseline]
    targets = {}
    for (model, data), group in evals.groupby(GROUP, sort=True):
        table = group.pivot(index="step", columns="path", values=ACC)  # steps x seeds
        common = table.dropna()
        if len(common) < len(table) and warnings is not None:
            dropped = sorted(set(table.index) - set(common.index))
            warnings.append(f"{model}/{data}: {baseline} seeds evaluated different steps; the target "
                            f"uses only steps all {table.shape[1]} evaluated (dropped {_ints(dropped)})")
        if common.empty:
            if warnings is not None:
                warnings.append(f"{model}/{data}: no step evaluated by every {baseline} seed; no target")
            continue
        targets[(model, data)] = float(common.mean(axis=1).max())
    return targets


def seed_mean_curve(evals: pd.DataFrame, seed_column: str, accuracy: str = ACC) -> pd.Series:
    """Accuracy per step, the mean over seeds, on the steps every seed evaluated (step order). Its
    maximum is the target: the paper's "best average accuracy GRPO reaches"."""
    table = evals.pivot_table(index="step", columns=seed_column, values=accuracy)
    return table.dropna().mean(axis=1).sort_index()


def _ints(values, limit: int = 8) -> str:
    shown = ", ".join(str(int(v)) for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")


def evals_at_target(run_evals: pd.DataFrame, target: float, accuracy: str = ACC) -> pd.DataFrame:
    """One run's evaluations at or above target (TOL below counts: a float that prints as the target
    reached it), in step order: the first is the crossing; none means the run is censored.
    accuracy: the column (val/acc in a metrics frame, val_acc in a committed curves CSV)."""
    ordered = run_evals.sort_values("step")
    return ordered[ordered[accuracy] >= target - TOL]


def rollouts_to_target(run_evals: pd.DataFrame, target: float) -> float:
    """cumulative_rollouts at the run's first eval with val/acc >= target, else inf (censored)."""
    hit = evals_at_target(run_evals, target)
    return float(hit["cumulative_rollouts"].iloc[0]) if len(hit) else math.inf


def censored_median(values) -> float:
    """Median with censored runs as inf; inf when at least half the seeds are censored."""
    values = np.asarray(values, dtype=float)
    return float(np.median(values)) if values.size else math.nan


def percentile_interval(stats, level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval of bootstrap statistics (NaN resamples dropped): the (1-level)/2 and
    (1+level)/2 quantiles, inverted-CDF rule (each end is one of the resampled values)."""
    stats = np.asarray(stats, dtype=float)
    stats = stats[~np.isnan(stats)]
    if stats.size == 0:
        return math.nan, math.nan
    alpha = (1.0 - level) / 2
    low, high = np.quantile(stats, [alpha, 1.0 - alpha], method="inverted_cdf")
    return float(low), float(high)


def resample_indices(size: int, rng: np.random.Generator, n_boot: int = N_BOOT) -> np.ndarray:
    """(n_boot, size) indices of `size` items drawn with replacement: one row per bootstrap resample."""
    return rng.integers(0, size, size=(n_boot, size))


def _resampled_medians(values: np.ndarray, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    return np.median(values[resample_indices(values.size, rng, n_boot)], axis=1)


def bootstrap_median_ci(values, seed: int = 0, n_boot: int = N_BOOT,
                        level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap interval of the censored median over seeds (ends may be inf)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    return percentile_interval(_resampled_medians(values, rng, n_boot), level)


def bootstrap_mean_ci(values, seed: int = 0, n_boot: int = N_BOOT,
                      level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over seeds (finite values, e.g. accuracies),
    under the same rules as the medians': a fresh generator per interval."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    return percentile_interval(values[resample_indices(values.size, rng, n_boot)].mean(axis=1), level)


def _ratio(base: np.ndarray, method: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((base == method) & np.isinf(base), np.nan, base / method)


def median_ratio(base_values, method_values, seed: int = 0, n_boot: int = N_BOOT,
            level: float = LEVEL) -> tuple[float, float, float]:
    """(point, low, high) of median(base) / median(method); point is nan when not computable.

    Not computable: either median censored (inf) or the method's median is 0.
    """
    base, method = np.asarray(base_values, float), np.asarray(method_values, float)
    if base.size == 0 or method.size == 0:
        return math.nan, math.nan, math.nan
    b_med, m_med = censored_median(base), censored_median(method)
    if not (math.isfinite(b_med) and math.isfinite(m_med)) or m_med <= 0:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    b_boot = _resampled_medians(base, rng, n_boot)
    m_boot = _resampled_medians(method, rng, n_boot)
    low, high = percentile_interval(_ratio(b_boot, m_boot), level)
    return b_med / m_med, low, high


def ratio_record(base_values, method_values, n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """median_ratio() as JSON, the layout every ratio of the map and the A/A are written in:
    {ratio, low, high (None when unbounded), high_inf, reached and runs (of `method_values`)}."""
    method = np.asarray(method_values, float)
    point, low, high = median_ratio(base_values, method, seed=seed, n_boot=n_boot)
    return {"ratio": finite_or_none(point), "low": finite_or_none(low), "high": finite_or_none(high),
            "high_inf": bool(high == math.inf), "reached": int(np.isfinite(method).sum()), "runs": int(method.size)}


def resolve_targets(metrics: pd.DataFrame, target: str | float | None = None, baseline: str = "grpo",
                    warnings: list[str] | None = None) -> dict[tuple[str, str], float | None]:
    """{(model, data): target or None} for every group in `metrics`.

    target: a float (fraction in [0, 1]) used for every group; None or "best" for the best of
    `baseline`; "<method>-best" for the best of that method.
    """
    groups = sorted(set(map(tuple, metrics[GROUP].itertuples(index=False)))) if len(metrics) else []
    if isinstance(target, (int, float)) and not isinstance(target, bool):
        return {g: float(target) for g in groups}
    if target not in (None, "best"):
        baseline = str(target).removesuffix("-best")
    best = target_accuracy(metrics, baseline, warnings)
    for group in groups:
        if group not in best and warnings is not None:
            warnings.append(f"{group[0]}/{group[1]}: no {baseline} runs with evaluations, so no target "
                            "(pass --target FLOAT to set one)")
    return {g: best.get(g) for g in groups}


def per_run_table(metrics: pd.DataFrame, targets: dict, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per run with evaluations: identity, status, stop_reason (a starved run's), rtt (inf if
    censored, nan if no target), final val/acc (last eval) and final cumulative_rollouts (last line)."""
    rows = []
    evals = eval_rows(metrics)
    status = dict(zip(runs["path"], runs["status"])) if runs is not None and len(runs) else {}
    reasons = dict(zip(runs["path"], runs["stop_reason"])) if runs is not None and "stop_reason" in runs else {}
    for path, lines in metrics.groupby("path", sort=True):
        run_evals = evals[evals["path"] == path]
        if run_evals.empty:
            continue
        first = lines.iloc[0]
        target = targets.get((first["model"], first["data"]))
        rtt = math.nan if target is None else rollouts_to_target(run_evals, target)
        last_eval = run_evals.sort_values("step").iloc[-1]
        rows.append({"path": path, "run_id": first["run_id"], "model": first["model"],
                     "data": first["data"], "method": first["method"], "seed": first["seed"],
                     "status": status.get(path, "unfinished"), "stop_reason": reasons.get(path), "rtt": rtt,
                     "final_val_acc": float(last_eval[ACC]),
                     "final_cumulative_rollouts": float(lines["cumulative_rollouts"].iloc[-1])})
    columns = ["path", "run_id", "model", "data", "method", "seed", "status", "stop_reason", "rtt",
               "final_val_acc", "final_cumulative_rollouts"]
    return pd.DataFrame(rows, columns=columns)


def _count(value):
    """Like finite_or_none, but whole numbers (rollout counts, seeds) become ints."""
    value = finite_or_none(value)
    return int(value) if value is not None and value.is_integer() else value


def _speedup_fields(name: str, group_runs: pd.DataFrame, method: str, rtt: np.ndarray,
                    target, seed: int, n_boot: int) -> dict:
    keys = [f"speedup_vs_{name}", f"speedup_vs_{name}_ci_low", f"speedup_vs_{name}_ci_high"]
    base = group_runs.loc[group_runs["method"] == name, "rtt"].to_numpy(float)
    if target is None or base.size == 0:
        return dict.fromkeys(keys)
    if method == name:
        point = 1.0 if math.isfinite(censored_median(rtt)) else math.nan
        values = (point, point, point)
    else:
        values = median_ratio(base, rtt, seed=seed, n_boot=n_boot)
    return {k: finite_or_none(v) for k, v in zip(keys, values)}


def method_record(group_runs: pd.DataFrame, method: str, target: float | None,
                  seed: int = 0, n_boot: int = N_BOOT) -> dict:
    """The report row of one method in one group (see analysis/speedup.py for the keys)."""
    mine = group_runs[group_runs["method"] == method]
    rtt = mine["rtt"].to_numpy(float)
    first = mine.iloc[0]
    record = {"model": first["model"], "data": first["data"], "method": method, "target": target,
              "seeds": int(len(mine)), "seed_values": [_count(s) for s in mine["seed"]],
              "unfinished": int((~mine["status"].isin(SCORED)).sum()),
              "starved": int((mine["status"] == STARVED).sum())}
    if target is None:
        record.update(reached=None, rollouts_to_target=None, rtt_ci_low=None, rtt_ci_high=None)
    else:
        low, high = bootstrap_median_ci(rtt, seed=seed, n_boot=n_boot)
        record.update(reached=int(np.isfinite(rtt).sum()),
                      rollouts_to_target=_count(censored_median(rtt)),
                      rtt_ci_low=_count(low), rtt_ci_high=_count(high))
    for name in COMPARATORS:
        record.update(_speedup_fields(name, group_runs, method, rtt, target, seed, n_boot))
    record["final_val_acc"] = finite_or_none(float(mine["final_val_acc"].median()))
    record["cumulative_rollouts"] = _count(float(mine["final_cumulative_rollouts"].median()))
    return record


def _seed_warnings(table: pd.DataFrame) -> list[str]:
    out = []
    for (model, data, method), rows in table.groupby(["model", "data", "method"], sort=True):
        seeds = rows["seed"].dropna()
        dup = sorted(set(seeds[seeds.duplicated()]))
        if dup:
            out.append(f"{model}/{data}/{method}: several runs share seed(s) {dup}; each counts as a seed: "
                       + ", ".join(rows.loc[rows["seed"].isin(dup), "path"]))
    return out


def score(runs: pd.DataFrame, metrics: pd.DataFrame, target: str | float | None = None,
          baseline: str = "grpo", seed: int = 0, n_boot: int = N_BOOT) -> tuple[list[dict], list[str]]:
    """Report records, one per (model, data, method), groups sorted, methods in method_order."""
    warnings: list[str] = []
    targets = resolve_targets(metrics, target, baseline, warnings)
    table = per_run_table(metrics, targets, runs)
    warnings += _seed_warnings(table)
    records = []
    for (model, data), group_runs in table.groupby(GROUP, sort=True):
        for method in method_order(group_runs["method"]):
            records.append(method_record(group_runs, method, targets.get((model, data)), seed, n_boot))
    return records, warnings

"""Markdown for the committed benchmark files (the .json next to each holds every number)."""

from __future__ import annotations

from pcbench.analysis.methods import label
from pcbench.analysis.report import DID_NOT_REACH, fmt_rollouts, starved_line
from pcbench.analysis.warmstart_note import warmstart_notice

NA = "-"
GOAL_TEXT = {"pc_vs_grpo": f"{label('pilot_commit')} >= {{goal}}x fewer rollouts to target than {label('grpo')}",
             "pc_vs_dapo": f"{label('pilot_commit')} >= {{goal}}x fewer than {label('dapo')}",
             "bayes_vs_pc": f"{label('pilot_commit_bayes')} ahead of {label('pilot_commit')} (speedup > {{goal}}x)",
             "best_vs_oracle": "best allocator within {goal}x of the oracle"}


def _x(point, low=None, high=None, ci=True) -> str:
    if point is None:
        return NA
    if not ci:
        return f"{point:.2f}x"
    lo = f"{low:.2f}" if low is not None else NA
    hi = f"{high:.2f}" if high is not None else "inf"
    return f"{point:.2f}x [{lo}, {hi}]"


def _rtt(rec: dict) -> tuple[str, str]:
    if rec["target"] is None:
        return NA, NA
    point = DID_NOT_REACH if rec["rollouts_to_target"] is None else fmt_rollouts(rec["rollouts_to_target"])
    low, high = rec["rtt_ci_low"], rec["rtt_ci_high"]
    if low is None and high is None:
        return point, NA
    ci = f"[{fmt_rollouts(low) if low is not None else NA}, {fmt_rollouts(high) if high is not None else 'inf'}]"
    return point, ci


def _pct(x) -> str:
    return NA if x is None else f"{100 * x:.1f}%"


def _acc_ci(r: dict) -> str:
    if r.get("acc_at_budget") is None:
        return NA
    return f"{_pct(r['acc_at_budget'])} [{100 * r['acc_at_budget_ci_low']:.1f}, {100 * r['acc_at_budget_ci_high']:.1f}]"


def rollouts_table(records: list[dict]) -> list[str]:
    head = ("| method | reached | rollouts to target | 95% CI | vs GRPO | vs DAPO | / oracle | acc at GRPO's budget "
            "| final acc | best acc | total rollouts |")
    lines = [head, "|" + "---|" * 11]
    for r in records:
        rtt, ci = _rtt(r)
        lines.append(f"| {label(r['method'])} | {r['reached']}/{r['seeds']} | {rtt} | {ci} "
                     f"| {_x(r['speedup_vs_grpo'], r['speedup_vs_grpo_ci_low'], r['speedup_vs_grpo_ci_high'])} "
                     f"| {_x(r['speedup_vs_dapo'], r['speedup_vs_dapo_ci_low'], r['speedup_vs_dapo_ci_high'])} "
                     f"| {_x(r['ratio_to_oracle'], r['ratio_to_oracle_ci_low'], r['ratio_to_oracle_ci_high'])} "
                     f"| {_acc_ci(r)} | {_pct(r['final_val_acc'])} | {_pct(r['best_val_acc'])} "
                     f"| {fmt_rollouts(r['cumulative_rollouts'])} |")
    return lines


def starved_lines(report: dict) -> list[str]:
    """Per method, the runs stopped because the allocator starved (none, or a report from before they
    were recorded: no lines), with their stop reasons from `per_run`."""
    reasons = {}
    for r in report.get("per_run", []):
        if r.get("status") == "starved":
            reasons.setdefault(r["method"], []).append(r.get("stop_reason") or "round_bound")
    lines = [f"- {starved_line(label(r['method']), r['starved'], r['seeds'], reasons.get(r['method'], ()))}"
             for r in report["records"] if r.get("starved")]
    return [*lines, ""] if lines else []


def _aa_one(name: str, rec: dict | None) -> str:
    if rec is None:
        return f"- {name} target: not measured (no A/A runs or no target)"
    hi = "inf" if rec["ci_high_inf"] else (NA if rec["ci_high"] is None else f"{rec['ci_high']:.2f}")
    lo = NA if rec["ci_low"] is None else f"{rec['ci_low']:.2f}"
    ratio = "not computable (a median is censored)" if rec["ratio"] is None else f"{rec['ratio']:.2f}x"
    verdict = "inside [0.80, 1.25]" if rec["within_band"] else "NOT inside [0.80, 1.25]"
    return (f"- {name} target {100 * rec['target']:.1f}%: GRPO (main seeds, {rec['grpo_reached']}/"
            f"{len(rec['grpo_rtt'])} reached) / GRPO (A/A seeds, {rec['aa_reached']}/{len(rec['aa_rtt'])} reached) "
            f"rollouts-to-target ratio {ratio}, 95% bootstrap CI [{lo}, {hi}]: {verdict}")


def aa_lines(report: dict) -> list[str]:
    """The A/A noise floor, printed above the method table: a ratio inside it is noise."""
    aa = report.get("aa") or {}
    if not aa:
        return []
    seeds = report.get("aa_seeds") or []
    return ["## A/A noise floor (GRPO vs GRPO on disjoint seeds)", "",
            f"GRPO on seeds {seeds[0]}..{seeds[-1]} scored like any method against the targets set by GRPO's "
            "main seeds. A method whose ratio to GRPO lies within this interval is not distinguishable from GRPO "
            "by this benchmark.", "", *[_aa_one(k, v) for k, v in aa.items()], ""] if seeds else []


def reference_lines(report: dict) -> list[str]:
    t = (report.get("targets") or {}).get("reference")
    if t is None or not report.get("reference_records"):
        return []
    return ["## Rollouts to target (reference-budget target)", "",
            f"Target {100 * t:.1f}%: GRPO's best seed-mean val/acc within the first 2/3 of the steps; every run has "
            "the whole horizon to reach it (pcbench/analysis/targets.py says why). Same columns as above.", "",
            *rollouts_table(report["reference_records"]), ""]


def regime_lines(report: dict) -> list[str]:
    checks = report.get("regime_checks") or []
    if not checks:
        return []
    out = ["## Regime (GRPO's runs; the full card: regime_card.md, regime_card.png)", ""]
    for c in checks:
        m = c["measured"]
        val = str(m) if isinstance(m, int) else (f"{100 * m:.2f} points" if ("se" in c["check"] or "gain" in c["check"])
                                                 else _pct(m))
        out.append(f"- {c['check']}: {val} (goal {c['goal']}): {'met' if c['met'] else 'NOT met'}")
    return out + [""]


def timing_table(records: list[dict]) -> list[str]:
    lines = ["| method | rollouts/step | gen calls/step | step s | step vs GRPO | generate s/step | ms/rollout "
             "| gen ms/rollout | gen tokens/s | run wall s |", "|" + "---|" * 10]
    for r in records:
        rel = NA if r["step_s_vs_grpo"] is None else f"{r['step_s_vs_grpo']:.2f}x"
        lines.append(f"| {label(r['method'])} | {r['rollouts_per_step']:.0f} | {r['gen_calls_per_step']:.2f} "
                     f"| {r['step_s']:.3f} | {rel} | {r['generate_s']:.3f} | {r['ms_per_rollout']:.2f} "
                     f"| {r['gen_ms_per_rollout']:.2f} | {r['gen_tokens_per_s']:,.0f} | {r['wall_s']:.0f} |")
    return lines


def goals_list(goals: dict) -> list[str]:
    lines = []
    for key in [k for k in GOAL_TEXT if k in goals]:  # fixed order: the .json stores keys sorted
        g = goals[key]
        verdict = {True: "met", False: "NOT met", None: "not measurable (censored or not run)"}[g["met"]]
        value = NA if g["measured"] is None else f"{g['measured']:.2f}x"
        extra = f" (best: {label(g['method'])})" if g.get("method") else ""
        lines.append(f"- {GOAL_TEXT[key].format(goal=g['goal'])}: measured {value}{extra}: **{verdict}**")
    return lines


def sample_efficiency_md(report: dict) -> str:
    p, s = report["provenance"], report["setup"]
    rescored = p.get("rescored")
    target = report["target"]
    out = ["# Sample efficiency of rollout allocators (embedded task)", "", warmstart_notice(p), "",
           f"Commit `{p['commit']}` ({len(p['dirty_files'])} tracked files modified in the shared checkout at the "
           f"time), {p['date_utc']} UTC, {p['cpus']} CPUs, load average at start {p['loadavg_start']}.", "",
           f"Command: `{p['command']}`"
           + (f"; rescored without training by `{rescored['command']}` at `{rescored['commit']}`" if rescored else ""),
           "",
           f"Setup: {s['seeds']} seeds x {len(s['methods'])} methods"
           + (f" (GRPO: {s['baseline_seeds']} seeds)" if s.get("baseline_seeds", s["seeds"]) != s["seeds"] else "")
           + f", {s['steps']} steps, train batch "
           f"{s['train_batch']} prompts x n={s['n']}, model {s['model']}, data {s['data']}, {s['jobs']} parallel "
           f"run(s) with 1 torch thread each; overrides {s['overrides'] or 'none (config defaults)'}.", "",
           "Target (docs/method.md#rollouts-to-target): the best seed-averaged val/acc GRPO reaches = "
           + (NA if target is None else f"{100 * target:.1f}%")
           + ". Rollouts to target: cumulative rollouts (every generated rollout, discarded ones included) at a "
           "run's first evaluation at or above it; median over seeds, 'did not reach' when censored. 95% CIs: "
           "percentile bootstrap over seeds. vs GRPO / vs DAPO: their median / this median. / oracle: this median "
           "/ the oracle's (the oracle's pass-rate probes are not counted; see docs/allocators.md). "
           "acc at GRPO's budget: seed-mean val/acc of each run's last evaluation within "
           + (NA if report.get("budget") is None else f"{report['budget']:,.0f}")
           + " cumulative rollouts (GRPO's median final count), 95% bootstrap CI of the mean; final / best acc: "
           "median final val/acc, best seed-mean val/acc.", "",
           *aa_lines(report), "## Rollouts to target (paper target)", "", *rollouts_table(report["records"]), "",
           *starved_lines(report),
           *reference_lines(report), *regime_lines(report),
           "## Wall-clock", "",
           "Medians over seeds of per-run means. step s: steps without an evaluation; ms/rollout: those steps' "
           "time over their generated rollouts (generation + PPO update + allocator); generate s: the backend's "
           "generation calls only (the oracle's include its uncounted probes); gen calls/step: sampling rounds, "
           "each one batched generation call.", "", *timing_table(report["timing"]), "",
           "## The issue's goals", "", *goals_list(report["goals"]), ""]
    if report["failures"]:
        out += ["## Failed runs", ""] + [f"- {f['method']} seed {f['seed']}: {f['error']} (log: {f['log']})"
                                         for f in report["failures"]] + [""]
    if report.get("notes"):
        out += ["## Notes", "", *report["notes"], ""]
    return "\n".join(out)


def throughput_md(report: dict) -> str:
    p = report["provenance"]
    out = ["# Generation throughput: embedded sampler vs transformers generate", "",
           f"Commit `{p['commit']}`, {p['date_utc']} UTC, {p['cpus']} CPUs, {report['threads']} torch thread(s), "
           f"load average at start {p['loadavg_start']}.", "", f"Command: `{p['command']}`", "",
           f"Same model ({report['model']}, {report['parameters']:,} parameters, {report['weights']}), same prompts "
           f"(each of batch/n prompts repeated n={report['n']} times, as rollouts are), temperature "
           f"{report['temperature']}, top_p {report['top_p']}, at most {report['max_new_tokens']} new tokens, "
           f"median of {report['repeats']} timed repeats (the two samplers alternating) after one warm-up. "
           "tokens/s counts generated tokens up to and including EOS; acc is the verifier's pass rate of the "
           "samples. same tokens: the share of rows where both samplers, seeded alike, drew exactly the same "
           "tokens (1.0 = the KV-cache sampler computes "
           "generate's distribution; our sampler splits calls above 4096 rows into chunks, which reorders the "
           "random draws, so there only acc and length can agree).", "",
           "| batch | sampler | tokens/s | s/call | mean length | acc | same tokens | speed vs generate |",
           "|" + "---|" * 8]
    for row in report["rows"]:
        rel = f"{row['vs_generate']:.2f}x" if row.get("vs_generate") else NA
        out.append(f"| {row['batch']} | {row['sampler']} | {row['tokens_per_s']:,.0f} | {row['seconds']:.3f} "
                   f"| {row['mean_length']:.2f} | {100 * row['acc']:.1f}% | {row['same_tokens']:.2f} | {rel} |")
    return "\n".join(out + [""])


# phases of `python -m pcbench.bench profile` (pcbench/bench/profile.py times them)
PHASES = ("startup", "generation", "reward", "update", "evaluation", "allocator", "writing")


def profile_md(report: dict) -> str:
    meta = report["provenance"]
    lines = ["# Embedded engine profile", "", *([report["note"], ""] if report.get("note") else []),
             f"`{meta['command']}` at commit `{meta['commit'][:10]}`"
             f"{' (dirty: ' + ', '.join(meta['dirty_files']) + ')' if meta['dirty_files'] else ''}, "
             f"{meta['date_utc']} UTC; {meta['cpu']}, {meta['cpus']} CPUs, torch {meta['torch']}, "
             f"transformers {meta['transformers']}, python {meta['python']}; one job at a time, one torch thread; "
             f"load average {meta['loadavg_start']} at start, {meta.get('loadavg_end')} at end.", "",
             f"Each job: `exp=sample_efficiency data.val_mode=exact`, {report['steps']} steps (exact evaluation at "
             f"step 0, every `train.eval_every` steps and the last, which also samples the cross-check), in a fresh "
             f"process. Seconds, wall (CPU in brackets); start-up = imports + config + model + warm-start load + "
             f"verl import (imports alone in the last column).", "",
             "| job | start-up | generation | reward | update | evaluation | allocator | writing | total | imports |",
             "|---|" + "---:|" * 9]
    for j in report["jobs"]:
        cells = [f"{j['wall'][p]:.2f} ({j['cpu'][p]:.2f})" for p in PHASES]
        lines.append(f"| {j['method']} n={j['n']} | " + " | ".join(cells)
                     + f" | {j['total_wall']:.1f} ({j['total_cpu']:.1f}) | {j['imports_wall']:.1f} ({j['imports_cpu']:.1f}) |")
    tot = {p: sum(j["wall"][p] for j in report["jobs"]) for p in PHASES}
    all_wall = sum(tot.values())
    lines += ["", "Share of all jobs' wall time: " + ", ".join(f"{p} {100 * tot[p] / all_wall:.0f}%" for p in PHASES)
              + f" (of {all_wall:.1f} s).", ""]
    return "\n".join(lines)

"""throughput.md: the embedded sampler against transformers' generate (`python -m pcbench.bench throughput`;
not committed)."""

from __future__ import annotations

from pcbench.analysis.formats import NA, md_table, ratio_text


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
           *md_table(["batch", "sampler", "tokens/s", "s/call", "mean length", "acc", "same tokens", "speed vs generate"])]
    for row in report["rows"]:
        rel = ratio_text(row.get("vs_generate")) if row.get("vs_generate") else NA
        out.append(f"| {row['batch']} | {row['sampler']} | {row['tokens_per_s']:,.0f} | {row['seconds']:.3f} "
                   f"| {row['mean_length']:.2f} | {100 * row['acc']:.1f}% | {row['same_tokens']:.2f} | {rel} |")
    return "\n".join(out + [""])

"""How a warm start's report names its stages, for a log line and for the results that cite it.

Apart from warmstart.py (which imports torch) so that the analysis can describe
pcbench/reference.json's warm start without loading the model code.
"""

from __future__ import annotations


def stages(report: dict) -> str:
    """'1,240 SFT steps', '1,240 SFT + 2,000 consolidation + 9 top-up steps' or '1,500 prelude + 820 SFT steps'
    (stages that took no step are left out)."""
    parts = [(report.get("prelude_steps"), "prelude"), (report.get("sft_steps"), "SFT"),
             (report.get("consolidation_steps"), "consolidation"), (report.get("top_up_steps"), "top-up")]
    if not any(n for n, what in parts if what != "SFT"):
        return f"{report.get('sft_steps', '?'):,} SFT steps" if isinstance(report.get("sft_steps"), int) else "? SFT steps"
    return " + ".join(f"{n:,} {what}" for n, what in parts if n or what == "SFT") + " steps"

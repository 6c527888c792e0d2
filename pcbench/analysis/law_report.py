"""Command alias: `python -m pcbench.analysis.law_report` runs `python -m pcbench.reports.law` (the report
moved there; committed result files cite the old name). Nothing imports this module."""

import runpy

if __name__ == "__main__":
    runpy.run_module("pcbench.reports.law", run_name="__main__", alter_sys=True)

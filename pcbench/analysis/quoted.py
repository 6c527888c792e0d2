"""Command alias: `python -m pcbench.analysis.quoted` runs `python -m pcbench.reports.quoted` (the report
moved there; committed result files cite the old name). Nothing imports this module."""

import runpy

if __name__ == "__main__":
    runpy.run_module("pcbench.reports.quoted", run_name="__main__", alter_sys=True)

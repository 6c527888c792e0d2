"""Command alias: `python -m pcbench.analysis.engine_speed` runs `python -m pcbench.reports.engine_speed` (the report
moved there; committed result files cite the old name). Nothing imports this module."""

import runpy

if __name__ == "__main__":
    runpy.run_module("pcbench.reports.engine_speed", run_name="__main__", alter_sys=True)

"""`python analysis/figures.py ...` from a checkout: the same command as `python -m pcbench.analysis.figures`
(or the `pcbench-figures` console script) from anywhere pcbench is installed. The code lives in
pcbench/analysis/figures.py; this folder is not a package, so the wheel installs no top-level `analysis`."""

import runpy

if __name__ == "__main__":
    runpy.run_module("pcbench.analysis.figures", run_name="__main__", alter_sys=True)

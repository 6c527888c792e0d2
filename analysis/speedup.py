"""`python analysis/speedup.py ...` from a checkout: the same command as `python -m pcbench.analysis.speedup`
(or the `pcbench-speedup` console script) from anywhere pcbench is installed. The code lives in
pcbench/analysis/speedup.py; this folder is not a package, so the wheel installs no top-level `analysis`."""

import runpy

if __name__ == "__main__":
    runpy.run_module("pcbench.analysis.speedup", run_name="__main__", alter_sys=True)

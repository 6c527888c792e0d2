"""pcbench entry point: compose the config, check it, hand it to the chosen backend.

    python -m pcbench.run -m method=grpo,dapo,pilot_commit          # embedded CPU default
    python -m pcbench.run backend=verl model=qwen2.5-math-1.5b data=deepmath method=pilot_commit

Every setting is checked here, before any model is built; a mistake ends the run with one
line on stderr naming the key and the fix (exit code 2). With -m every job of the sweep is
composed and checked before the first one starts. A failure after that (a crash, a full
disk, Ctrl-C) ends with one line saying what happened; the traceback goes to error.log in
the run folder, which resumes with the same command (exit code 1, 130 for Ctrl-C).
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from pcbench import paths
from pcbench.config import ConfigError, check_config, register_configs
from pcbench.data import MissingDataError
from pcbench.precheck import check_sweep, one_line, sweep_jobs  # noqa: F401  (one_line, sweep_jobs: tests import them here)
from pcbench.rundir import RunFolderError, record_failure
from pcbench.runs import execute, load_backend

register_configs()
CONF_DIR = str(paths.CONF_DIR)  # absolute: main() also works when imported; a checkout's conf/ or the wheel's copy


def fail(kind: str, message: str, code: int = 2):
    print(f"pcbench: {kind}: {message}", file=sys.stderr)
    sys.exit(code)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig):
    return start(cfg)


def start(cfg: DictConfig):
    """One composed run through pcbench.runs.execute, every failure as one line and an exit code."""
    try:
        check_config(cfg)
        backend = load_backend(cfg)
    except ConfigError as e:
        fail("config error", str(e))
    try:
        return execute(cfg, backend)
    except ConfigError as e:  # the backend's own checks (backend.check), before any file
        fail("config error", str(e))
    except MissingDataError as e:
        fail("data error", str(e))
    except RunFolderError as e:
        fail("run folder", str(e))
    except KeyboardInterrupt:
        fail("interrupted", report(cfg, "interrupted (Ctrl-C)"), 130)
    except Exception as e:  # anything after composition: one line, the traceback in the run folder
        fail("run failed", report(cfg, f"{type(e).__name__}: {e}"), 1)


def report(cfg: DictConfig, what: str) -> str:
    """record_failure's line; if even that fails, the error itself (its traceback on stderr)."""
    try:
        return record_failure(cfg, what)
    except Exception:
        import traceback

        traceback.print_exc()
        return what.strip().splitlines()[0] if what.strip() else what


if __name__ == "__main__":
    check_sweep(sys.argv[1:], fail)  # exits with one line on the first bad job
    main()

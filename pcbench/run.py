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
from pathlib import Path

import hydra
from omegaconf import DictConfig

from pcbench import paths
from pcbench.config import ConfigError, check_config, register_configs
from pcbench.data import MissingDataError
from pcbench.rundir import RunFolderError, record_failure
from pcbench.runs import execute, load_backend

register_configs()
CONF_DIR = str(paths.CONF_DIR)  # absolute: main() also works when imported; a checkout's conf/ or the wheel's copy


def fail(kind: str, message: str, code: int = 2):
    print(f"pcbench: {kind}: {message}", file=sys.stderr)
    sys.exit(code)


def sweep_jobs(argv: list[str]) -> list[list[str]]:
    """The override list of every job `python -m pcbench.run [-m] <argv>` launches (one without -m).

    Uses Hydra's own argument parser and BasicSweeper expansion (a,b / range() / glob()); a
    sweeper plugin with its own search space (hydra/sweeper=...) is not expanded here.
    """
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    args = hydra_args(argv)
    if args.config_path or args.cfg or args.info or args.help or args.hydra_help or args.shell_completion:
        return []
    overrides = [o for o in args.overrides if not o.lstrip("~+").startswith(("hydra.", "hydra/"))]
    if not args.multirun:
        return [overrides]
    parser = OverridesParser.create()
    dirs = [CONF_DIR, *user_dirs(argv)]
    parsed = [expand_glob(o, parser, dirs) for o in parser.parse_overrides(overrides)]
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def hydra_args(argv: list[str]):
    from hydra._internal.utils import get_args_parser

    return get_args_parser().parse_known_args(argv)[0]


def user_dirs(argv: list[str]) -> list[str]:
    """The user's own config folders, absolute: --config-dir and file:// entries of hydra.searchpath."""
    args = hydra_args(argv)
    dirs = [str(Path(args.config_dir).resolve())] if args.config_dir else []
    for o in args.overrides:
        if o.startswith("hydra.searchpath="):
            entries = o.split("=", 1)[1].strip("[]").split(",")
            dirs += [str(Path(e.strip().removeprefix("file://")).resolve()) for e in entries if e.strip().startswith("file://")]
    return dirs


def user_file(group: str, option: str, argv: list[str]) -> str | None:
    """The user's yaml that provides `group/option`, if it comes from their own config folder."""
    for d in user_dirs(argv):
        path = Path(d) / group / f"{option}.yaml"
        if path.is_file():
            return str(path)
    return None


def expand_glob(override, parser, dirs: list[str]):
    """method=glob(*) -> method=dapo,greso,...: a group's options are its <dir>/<group>/*.yaml files."""
    from hydra.core.override_parser.types import Glob

    if not isinstance(override.value(), Glob):
        return override
    options = sorted({p.stem for d in dirs for p in (Path(d) / override.key_or_group).glob("*.yaml")})
    chosen = override.value().filter(options)
    return parser.parse_override(f"{override.get_key_element()}={','.join(chosen)}")


def one_line(error: Exception) -> str:
    """Hydra's / OmegaConf's multi-line composition error as one line (keys, value, choices)."""
    out: list[str] = []
    text, cause = str(error), error.__cause__
    while cause is not None:  # Hydra: "Error merging override k=v" <- OmegaConf: "Value 'v' is not a valid bool"
        text, cause = f"{text}\n{cause}", cause.__cause__
    for line in (part.strip() for part in text.splitlines()):
        if not line or line.startswith(("full_key", "object_type", "reference_type", "provider=", "Config search")):
            continue
        if out and out[-1].startswith("Available options") and not out[-1].endswith(":"):
            out[-1] += ", " + line
        elif out and out[-1].endswith(":"):
            out[-1] += " " + line
        else:
            out.append(line)
    return "; ".join(out)


def check_sweep(argv: list[str]) -> None:
    """Compose and check every job (all of a -m sweep) before Hydra writes anything or starts one."""
    from hydra import compose, initialize_config_dir

    try:
        jobs = sweep_jobs(argv)
    except Exception:  # a command line the pre-check cannot expand: Hydra reports it, each job checks itself
        return
    # the user's config folders (--config-dir, hydra.searchpath) apply to every job, and so does --config-name
    dirs = user_dirs(argv)
    search = [f"hydra.searchpath=[{','.join('file://' + d for d in dirs)}]"] if dirs else []
    name = hydra_args(argv).config_name or "config"
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        for i, job in enumerate(jobs):
            try:
                check_config(compose(config_name=name, overrides=search + job))
            except Exception as e:  # ConfigError, or Hydra/OmegaConf refusing an override (type, typo)
                message = (str(e) if isinstance(e, ConfigError) else one_line(e)) + naming_user_file(e, job, argv)
                swept = [o for o in job if not all(o in other for other in jobs)]  # what makes this job differ
                where = f" (sweep job {i} of {len(jobs)}: {' '.join(swept)}; no job was started)" if len(jobs) > 1 else ""
                fail("config error", f"{message}{where}")


def naming_user_file(error: Exception, job: list[str], argv: list[str]) -> str:
    """' (in <file>)' when the failing setting comes from a yaml in the user's own config folder:
    Hydra names the config ("In 'method/mine': ..."), a check names the key ("method.n=1: ...")."""
    import re

    text = str(error)
    named = re.match(r"In '([\w.-]+)/([\w.-]+)'", text)
    if named:
        found = user_file(named[1], named[2], argv)
    else:
        group = text.split("=", 1)[0].split(".", 1)[0] if "=" in text.split(":", 1)[0] else ""
        choice = next((o.split("=", 1)[1] for o in job if o.split("=", 1)[0].lstrip("+~") == group), None)
        found = user_file(group, choice, argv) if group and choice else None
    return f" (in {found})" if found else ""


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
    check_sweep(sys.argv[1:])  # exits with one line on the first bad job
    main()

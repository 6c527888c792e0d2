"""The pre-check of `python -m pcbench.run`: compose and check every job of the command line (all
of a -m sweep, a sweep file's `hydra.sweeper.params` included) before Hydra writes anything or
starts one, with the user's own config folders (--config-dir, hydra.searchpath) and primary config
(--config-name) as Hydra will use them. A mistake ends the command with one line that names the
job and, when the setting comes from the user's own yaml, that file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from pcbench import paths
from pcbench.config import ConfigError, check_config

CONF_DIR = str(paths.CONF_DIR)


def hydra_args(argv: list[str]):
    from hydra._internal.utils import get_args_parser

    return get_args_parser().parse_known_args(argv)[0]


def sweep_jobs(argv: list[str], params: list[str] = ()) -> list[list[str]]:
    """The override list of every job `python -m pcbench.run [-m] <argv>` launches (one without -m).

    Uses Hydra's own argument parser and BasicSweeper expansion (a,b / range() / glob()); `params`
    are a sweep file's hydra.sweeper.params as overrides (the command line's win, as in Hydra). A
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
    given = {o.split("=", 1)[0] for o in overrides}
    overrides = [p for p in params if p.split("=", 1)[0] not in given] + overrides
    parser = OverridesParser.create()
    dirs = [CONF_DIR, *user_dirs(args)]
    parsed = [expand_glob(o, parser, dirs) for o in parser.parse_overrides(overrides)]
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def user_dirs(args) -> list[str]:
    """The user's own config folders, absolute: --config-dir and file:// entries of hydra.searchpath
    (`args`: the command line as Hydra parses it, hydra_args)."""
    dirs = [str(Path(args.config_dir).resolve())] if args.config_dir else []
    for o in args.overrides:
        if o.startswith("hydra.searchpath="):
            entries = [e.strip() for e in o.split("=", 1)[1].strip("[]").split(",")]
            dirs += [str(Path(e.removeprefix("file://")).resolve()) for e in entries if e.startswith("file://")]
    return dirs


def user_file(group: str, option: str, dirs: list[str]) -> str | None:
    """The yaml in the user's folders `dirs` that provides `group/option` (pcbench's own conf/ wins
    a name clash, as in Hydra)."""
    if (Path(CONF_DIR) / group / f"{option}.yaml").is_file():
        return None
    for d in dirs:
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


def composition(dirs: list[str], name: str) -> tuple[str, str, list[str]] | None:
    """(primary folder, primary config name, search-path override) as Hydra will compose the jobs;
    None when the primary config is nowhere to be found (Hydra then says so itself).

    A --config-name from the user's folder (a sweep file) is the primary config, with pcbench's
    conf/ on the search path for its `defaults: [config, ...]`."""
    primary, search = CONF_DIR, dirs
    if not (Path(CONF_DIR) / f"{name}.yaml").is_file():
        home = next((d for d in dirs if (Path(d) / f"{name}.yaml").is_file()), None)
        if home is None:
            return None
        primary, search = home, [CONF_DIR, *(d for d in dirs if d != home)]
    return primary, name, [f"hydra.searchpath=[{','.join('file://' + d for d in search)}]"] if search else []


def check_sweep(argv: list[str], fail: Callable[[str, str], None]) -> None:
    """Compose and check every job; `fail(kind, message)` (which exits) on the first bad one."""
    from hydra import compose, initialize_config_dir

    args = hydra_args(argv)
    dirs = user_dirs(args)
    where = composition(dirs, args.config_name or "config")
    if where is None:
        return
    primary, name, search = where
    with initialize_config_dir(config_dir=primary, version_base="1.3"):
        try:
            params = sweep_file_params(compose, name, search) if args.multirun else []
            jobs = sweep_jobs(argv, params)
        except Exception:  # a command line the pre-check cannot expand: Hydra reports it, each job checks itself
            return
        for i, job in enumerate(jobs):
            try:
                check_config(compose(config_name=name, overrides=search + job))
            except Exception as e:  # ConfigError, or Hydra/OmegaConf refusing an override (type, typo)
                message = (str(e) if isinstance(e, ConfigError) else one_line(e)) + naming_user_file(e, job, dirs)
                swept = [o for o in job if not all(o in other for other in jobs)]  # what makes this job differ
                which = f" (sweep job {i} of {len(jobs)}: {' '.join(swept)}; no job was started)" if len(jobs) > 1 else ""
                fail("config error", f"{message}{which}")


def sweep_file_params(compose, name: str, search: list[str]) -> list[str]:
    """The hydra.sweeper.params of the primary config (a sweep file), as overrides."""
    try:
        cfg = compose(config_name=name, overrides=search, return_hydra_config=True)
    except Exception:  # the jobs' own composition reports it
        return []
    params = cfg.hydra.sweeper.get("params") or {}
    return [f"{key}={value}" for key, value in params.items()]


def naming_user_file(error: Exception, job: list[str], dirs: list[str]) -> str:
    """' (in <file>)' when the failing setting comes from a yaml in the user's own config folder:
    Hydra names the config ("In 'method/mine': ..."), a check names the key ("method.n=1: ...")."""
    text = str(error)
    named = re.match(r"In '([\w.-]+)/([\w.-]+)'", text)
    if named:
        found = user_file(named[1], named[2], dirs)
    else:
        head = text.split(":", 1)[0]
        group = head.split("=", 1)[0].split(".", 1)[0] if "=" in head else ""
        choice = next((o.split("=", 1)[1] for o in job if o.split("=", 1)[0].lstrip("+~") == group), None)
        found = user_file(group, choice, dirs) if group and choice else None
    return f" (in {found})" if found else ""

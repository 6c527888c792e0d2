"""Where pcbench finds its configs, whether it runs from a checkout or from an installed wheel.

The layout keeps `conf/` at the top of the repository, where users look for it; the wheel ships a
copy of it as `pcbench/conf` (setup.py's build step), so `python -m pcbench.run` works from any
folder after `pip install pcbench-*.whl`. A checkout or an editable install has no `pcbench/conf`
and uses the top-level folder itself, so an edit there takes effect at once.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def conf_dir() -> Path:
    """The config folder: the wheel's copy if this package was installed from one, else the checkout's."""
    for candidate in (PACKAGE / "conf", PACKAGE.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"pcbench: no config folder: neither {PACKAGE / 'conf'} (an installed wheel) nor "
                            f"{PACKAGE.parent / 'conf'} (a checkout) holds config.yaml; reinstall pcbench "
                            "(pip install <wheel>, or pip install -e . in a checkout)")


CONF_DIR = conf_dir()

"""Everything is declared in pyproject.toml; this file only adds the step that ships conf/ in the wheel."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithConf(build_py):
    """Copy the top-level conf/ into the built package as pcbench/conf (see pcbench/paths.py).

    Not for editable installs: those read the checkout's conf/ directly."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "pcbench" / "conf"
        shutil.rmtree(target, ignore_errors=True)  # a stale copy from an earlier build
        shutil.copytree("conf", target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithConf})

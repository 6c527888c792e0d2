"""`analysis` ships with the project: pcbench.bench imports it, so a wheel without it would give
a `python -m pcbench.bench` that works only from the repository root."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_holds_analysis_and_the_bench(tmp_path):
    src = tmp_path / "src"  # a copy: an in-tree build would leave build/ and *.egg-info in the checkout
    for part in ("pcbench", "analysis"):
        shutil.copytree(REPO / part, src / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / part, src / part)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("pcbench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.relative_to(REPO).as_posix() for d in ("analysis", "pcbench/bench") for p in (REPO / d).glob("*.py")}
    assert shipped <= names, sorted(shipped - names)
    assert not any(n.startswith("tests/") for n in names)  # verl already ships a top-level `tests`


def test_analysis_never_edits_sys_path():
    for path in (REPO / "analysis").glob("*.py"):
        assert "sys.path" not in path.read_text(), f"{path.name} edits sys.path; analysis is installed instead"

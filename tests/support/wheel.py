"""Building agentkeel's wheel as an installer would, and a bare venv to install it in."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from tests.support.locks import held
from tests.support.paths import ROOT


def build_wheel(into: Path) -> Path:
    """The checkout's wheel (no dependencies), built with this interpreter's setuptools
    where it has one (a 3.12+ venv has none: then pip builds in an isolated environment)."""
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    # An in-place build writes the checkout's build/ and egg-info: one test process at a time.
    with held("wheel-build"):
        built = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q",
             "-w", str(into), str(ROOT)],
            capture_output=True, text=True,
        )  # fmt: skip
    assert built.returncode == 0, built.stderr
    [wheel] = into.glob("agentkeel-*.whl")
    return wheel


def bare_venv(env_dir: Path, *, with_this_interpreters_packages: bool) -> tuple[Path, Path]:
    """A venv without pip; its python and its site-packages. With this interpreter's
    packages as a path entry after its own (a .pth line: what the venv installs wins)."""
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    if with_this_interpreters_packages:
        (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, site

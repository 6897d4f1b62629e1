"""A release as it is built and checked before upload: `python -m build` makes the sdist
and the wheel from a clean copy of the checkout, `twine check` reads their metadata as
PyPI reads it, and the metadata says what an adopter's legal and packaging review looks
for (the licence and its file, classifiers, project URLs, one version)."""

from __future__ import annotations

import email
import importlib.util
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import agentkeel
from tests.support.paths import ROOT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("build") is None or importlib.util.find_spec("twine") is None,
    reason="build and twine are in the dev extra",
)


def _clean_copy(into: Path) -> Path:
    """The tracked files alone: what a release is made from (no build/ or egg-info)."""
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    for name in files:
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name, follow_symlinks=False)
        elif source.is_symlink():  # agentkeel/'s links to the rooms
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            (into / name).symlink_to(source.readlink())
    return into


def test_the_sdist_and_wheel_build_and_pass_twine_check(tmp_path: Path) -> None:
    source = _clean_copy(tmp_path / "src")
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-isolation"]
    built = subprocess.run(
        [sys.executable, "-m", "build", *isolation, "--outdir", str(tmp_path / "dist"),
         str(source)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [sdist] = (tmp_path / "dist").glob("agentkeel-*.tar.gz")
    [wheel] = (tmp_path / "dist").glob("agentkeel-*.whl")
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr

    with zipfile.ZipFile(wheel) as archive:
        info = f"agentkeel-{agentkeel.__version__}.dist-info"
        meta = email.message_from_bytes(archive.read(f"{info}/METADATA"))
        assert archive.read(f"{info}/licenses/LICENSE").startswith(b"MIT License")
    assert meta["Version"] == agentkeel.__version__  # the one version source
    assert meta["License-Expression"] == "MIT"
    assert meta["License-File"] == "LICENSE"
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3.13" in classifiers
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Source", "Documentation", "Changelog"} <= urls.keys()
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[-1] for n in archive.getnames()}
    assert {"LICENSE", "CHANGELOG.md", "pyproject.toml"} <= names
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog or f"## [{agentkeel.__version__}]" in changelog

"""The built wheel is one namespace: it installs beside an application's own `workflows` and
`activities` packages, and both import and work."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

from tests.support.paths import ROOT


def test_the_wheel_installs_beside_packages_named_workflows_and_activities(
    tmp_path: Path,
) -> None:
    # Built with this interpreter's setuptools where it has one (a 3.12+ venv has none:
    # then pip builds in an isolated environment of its own).
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q",
         "-w", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    [wheel] = (tmp_path / "dist").glob("agentkeel-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert tops == {"agentkeel", wheel.name.split("-py3")[0] + ".dist-info"}, tops

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    # The application's own packages, as another project would ship them.
    for name in ("workflows", "activities"):
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(f"OWNER = 'the application'\nNAME = {name!r}\n")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    # agentkeel's dependencies from this interpreter (a path entry: its .pth files, the
    # editable checkout among them, are not processed there).
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = (
        "import workflows, activities, agentkeel\n"
        "from agentkeel.workflows.agent import AgentWorkflow\n"
        "from agentkeel.schemas.tools import TOOLS\n"
        "assert workflows.OWNER == activities.OWNER == 'the application'\n"
        "assert agentkeel.__file__.startswith(SITE), agentkeel.__file__\n"
        "assert 'get_order' in TOOLS and AgentWorkflow.__name__ == 'AgentWorkflow'\n"
        "from agentkeel.activities.database.migrate import migration_files\n"
        "from agentkeel.examples.shop import domain\n"
        "versions = [v for v, _ in migration_files(domain)]\n"
        "assert versions[0] == '0002_agent_runs' and versions[-1] == '0002_tenants', versions\n"
        "print('ok')\n"
    ).replace("SITE", repr(str(site)))
    # Nothing of this checkout on the path: only what the wheel installed.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"

"""The built wheel is one namespace: it installs beside an application's own `workflows` and
`activities` packages, and both import and work."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

from tests.support.wheel import bare_venv, build_wheel


def test_the_wheel_installs_beside_packages_named_workflows_and_activities(
    tmp_path: Path,
) -> None:
    wheel = build_wheel(tmp_path / "dist")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert tops == {"agentkeel", wheel.name.split("-py3")[0] + ".dist-info"}, tops

    # agentkeel's dependencies from this interpreter (a path entry: its .pth files, the
    # editable checkout among them, are not processed there).
    python, site = bare_venv(tmp_path / "venv", with_this_interpreters_packages=True)
    # The application's own packages, as another project would ship them.
    for name in ("workflows", "activities"):
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(f"OWNER = 'the application'\nNAME = {name!r}\n")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
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

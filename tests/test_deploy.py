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
    or `_count` (`workers.metrics` exports with `counters_total_suffix`)."""
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

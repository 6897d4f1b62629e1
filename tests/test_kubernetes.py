"""The Kubernetes base (deploy/kubernetes/base), rendered with `kubectl kustomize` and
validated offline: the core objects against Kubernetes' own schemas (`kubernetes-validate`,
strict: an unknown field fails), KEDA's `ScaledObject` and `TriggerAuthentication` against
a schema of the fields of KEDA's v1alpha1 API this base uses (below; additional fields are
refused, so a misspelt one fails). Then what the base must say: probes on /ready, draining
within the grace period, PDBs that select the pods, one Temporal trigger per worker kind on
its own task queue, the GPU and the model volume of the inference pool.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from agentkeel.schemas.queues import TASK_QUEUE, inference_queue
from agentkeel.workers.worker import GRACEFUL_SHUTDOWN

kubernetes_validate = pytest.importorskip("kubernetes_validate")
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
BASE = Path(__file__).resolve().parents[1] / "deploy" / "kubernetes" / "base"
KUBERNETES_VERSION = "1.32.0"

_NAME_REF = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}, "kind": {"type": "string"}},
    "additionalProperties": False,
}
_META = {"type": "object", "required": ["name"]}
SCALED_OBJECT = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "kind": {"const": "ScaledObject"},
        "metadata": _META,
        "spec": {
            "type": "object",
            "required": ["scaleTargetRef", "triggers"],
            "additionalProperties": False,
            "properties": {
                "scaleTargetRef": _NAME_REF,
                "minReplicaCount": {"type": "integer", "minimum": 0},
                "maxReplicaCount": {"type": "integer", "minimum": 1},
                "pollingInterval": {"type": "integer", "minimum": 1},
                "cooldownPeriod": {"type": "integer", "minimum": 0},
                "triggers": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["type", "metadata"],
                        "additionalProperties": False,
                        "properties": {
                            "type": {"type": "string"},
                            "metadata": {
                                "type": "object",
                                "additionalProperties": {"type": "string"},
                            },
                            "authenticationRef": _NAME_REF,
                        },
                    },
                },
            },
        },
    },
}
TRIGGER_AUTHENTICATION = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "kind": {"const": "TriggerAuthentication"},
        "metadata": _META,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "secretTargetRef": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["parameter", "name", "key"],
                        "additionalProperties": False,
                        "properties": {k: {"type": "string"} for k in ("parameter", "name", "key")},
                    },
                }
            },
        },
    },
}
TEMPORAL_TRIGGER_METADATA = {
    "type": "object",
    "required": ["endpoint", "taskQueue"],
    "additionalProperties": False,
    "properties": {
        k: {"type": "string"}
        for k in (
            "endpoint", "namespace", "taskQueue", "queueTypes", "targetQueueSize",
            "activationTargetQueueSize", "tlsServerName", "unsafeSsl", "minConnectTimeout",
        )
    },
}  # fmt: skip
"""The Temporal scaler's parameters (KEDA 2.17+) this base may use."""


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl is not installed")
    out = subprocess.run(
        [KUBECTL, "kustomize", str(BASE)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def _one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def test_every_object_is_valid_against_its_schema(rendered: list[dict[str, Any]]) -> None:
    keda = {"ScaledObject": SCALED_OBJECT, "TriggerAuthentication": TRIGGER_AUTHENTICATION}
    for doc in rendered:
        if doc["kind"] in keda:
            jsonschema.validate(doc, keda[doc["kind"]])
            for trigger in doc["spec"].get("triggers", []):
                assert trigger["type"] == "temporal"
                jsonschema.validate(trigger["metadata"], TEMPORAL_TRIGGER_METADATA)
        else:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_a_misspelt_field_fails_validation(rendered: list[dict[str, Any]]) -> None:
    scaled = _one(rendered, "ScaledObject", "agentkeel-cpu-worker")
    wrong = {**scaled, "spec": {**scaled["spec"], "maxReplicas": 3}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, SCALED_OBJECT)
    job = _one(rendered, "Job", "agentkeel-migrate")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate({**job, "spec": {**job["spec"], "retries": 3}},
                                     KUBERNETES_VERSION, strict=True)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "queue", "kinds"),
    [
        ("agentkeel-cpu-worker", TASK_QUEUE, "workflow,activity"),
        ("agentkeel-inference-worker", inference_queue(TASK_QUEUE), "activity"),
    ],
)
def test_each_worker_kind_is_ready_only_when_loaded_drains_and_scales_on_its_queue(
    rendered: list[dict[str, Any]], name: str, queue: str, kinds: str
) -> None:
    deployment = _one(rendered, "Deployment", name)
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/live"
    health = {p["name"]: p["containerPort"] for p in container["ports"]}["health"]
    config = _one(rendered, "ConfigMap", "agentkeel-config")["data"]
    assert config["AGENTKEEL_HEALTH_ADDRESS"].endswith(f":{health}")
    assert pod["terminationGracePeriodSeconds"] > GRACEFUL_SHUTDOWN.total_seconds() * 2
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    budget = _one(rendered, "PodDisruptionBudget", name)
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    scaled = _one(rendered, "ScaledObject", name)
    assert scaled["spec"]["scaleTargetRef"]["name"] == name
    [trigger] = scaled["spec"]["triggers"]
    assert trigger["metadata"]["taskQueue"] == queue
    assert trigger["metadata"]["queueTypes"] == kinds
    assert trigger["metadata"]["endpoint"] == config["AGENTKEEL_TEMPORAL_ADDRESS"]
    auth = _one(rendered, "TriggerAuthentication", trigger["authenticationRef"]["name"])
    [ref] = auth["spec"]["secretTargetRef"]
    assert (ref["parameter"], ref["name"]) == ("apiKey", "agentkeel-temporal")


def test_the_inference_pool_requests_a_gpu_and_mounts_the_models(
    rendered: list[dict[str, Any]],
) -> None:
    pod = _one(rendered, "Deployment", "agentkeel-inference-worker")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    [mount] = container["volumeMounts"]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    claim = volume["persistentVolumeClaim"]["claimName"]
    assert _one(rendered, "PersistentVolumeClaim", claim)
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["HF_HOME"] == mount["mountPath"]

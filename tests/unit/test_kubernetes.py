"""The Kubernetes base (deploy/kubernetes/base), rendered with `kubectl kustomize` and
validated offline: the core objects against Kubernetes' own schemas (`kubernetes-validate`,
strict: an unknown field fails), KEDA's `ScaledObject` and `TriggerAuthentication` against
the `openAPIV3Schema` of KEDA's own CRDs, vendored at a release (deploy/kubernetes/keda-crds;
unknown fields refused, as the API server's strict validation refuses them). Then what the
base must say: probes on /ready, draining within the grace period, PDBs that select the pods,
one Temporal trigger per worker kind on its own task queue, the GPU and the model volume of
the inference pool, and both worker kinds polling as one worker deployment version that
their triggers scale on (as KEDA resolves it from each Deployment's container).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from agentkeel.schemas.queues import TASK_QUEUE, inference_queue
from agentkeel.settings.model import Settings
from agentkeel.workers.worker import GRACEFUL_SHUTDOWN
from tests.support.kustomize import BASE, one, render

kubernetes_validate = pytest.importorskip("kubernetes_validate")
KUBERNETES_VERSION = "1.32.0"

KEDA_CRDS = BASE.parent / "keda-crds"
"""KEDA's own CRDs at a release tag, vendored (its README names the version)."""


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A CRD's structural schema as the API server applies it with strict field validation:
    an object's fields not in its `properties` are refused, unless it preserves unknown
    fields. (Without this, JSON Schema would let a misspelt field through.)"""
    out: dict[str, Any] = dict(schema)
    if "properties" in out:
        out["properties"] = {k: _strict(v) for k, v in out["properties"].items()}
        if not out.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _strict(out["additionalProperties"])
    if isinstance(out.get("items"), dict):
        out["items"] = _strict(out["items"])
    for combinator in ("anyOf", "allOf", "oneOf"):
        if combinator in out:
            out[combinator] = [_strict(s) for s in out[combinator]]
    return out


def _crd_schema(file: str) -> dict[str, Any]:
    crd = yaml.safe_load((KEDA_CRDS / file).read_text())
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = _strict(version["schema"]["openAPIV3Schema"])
    group = crd["spec"]["group"]
    schema["properties"]["apiVersion"] = {"const": f"{group}/v1alpha1"}
    schema["properties"]["kind"] = {"const": crd["spec"]["names"]["kind"]}
    schema["required"] = ["apiVersion", "kind", "metadata", *schema.get("required", [])]
    return schema


KEDA_SCHEMAS = {
    "ScaledObject": _crd_schema("keda.sh_scaledobjects.yaml"),
    "TriggerAuthentication": _crd_schema("keda.sh_triggerauthentications.yaml"),
}
TEMPORAL_TRIGGER_METADATA = {
    "type": "object",
    "required": ["endpoint", "taskQueue"],
    "additionalProperties": False,
    "properties": {
        k: {"type": "string"}
        for k in (
            "endpoint", "namespace", "taskQueue", "queueTypes", "targetQueueSize",
            "activationTargetQueueSize", "workerDeploymentName", "workerDeploymentBuildId",
            "minConnectTimeout", "unsafeSsl", "tlsServerName",
            # The parameters of order `resolvedEnv`, read from the scale target's container.
            "endpointFromEnv", "namespaceFromEnv", "taskQueueFromEnv",
            "workerDeploymentNameFromEnv", "workerDeploymentBuildIdFromEnv",
        )
    },
}  # fmt: skip
"""The Temporal scaler's trigger metadata in KEDA v2.20.2 (`pkg/scalers/temporal_scaler.go`,
less its deprecated build-ID rules; `<name>FromEnv` per `scalersconfig/typed_config.go`): a
trigger's metadata is a free string map in the CRD."""


def _validator(kind: str) -> jsonschema.protocols.Validator:
    schema = KEDA_SCHEMAS[kind]
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render(BASE)


def test_every_object_is_valid_against_its_schema(rendered: list[dict[str, Any]]) -> None:
    kinds = {d["kind"] for d in rendered}
    assert {"ScaledObject", "TriggerAuthentication"} <= kinds
    for doc in rendered:
        if doc["kind"] in KEDA_SCHEMAS:
            _validator(doc["kind"]).validate(doc)
            for trigger in doc["spec"].get("triggers", []):
                assert trigger["type"] == "temporal"
                jsonschema.validate(trigger["metadata"], TEMPORAL_TRIGGER_METADATA)
        else:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_a_broken_object_fails_validation(rendered: list[dict[str, Any]]) -> None:
    scaled = one(rendered, "ScaledObject", "agentkeel-cpu-worker")
    spec = scaled["spec"]
    [trigger] = spec["triggers"]
    for broken in (
        {**spec, "maxReplicas": 3},  # misspelt
        {**spec, "minReplicaCount": "two"},  # of the wrong type
        {k: v for k, v in spec.items() if k != "triggers"},  # a required field missing
        {**spec, "triggers": [{**trigger, "authenticationRef": {"kind": "Secret", "name": "x"}}]},
        {**spec, "scaleTargetRef": {"nam": spec["scaleTargetRef"]["name"]}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            _validator("ScaledObject").validate({**scaled, "spec": broken})
    auth = one(rendered, "TriggerAuthentication", "agentkeel-temporal")
    [ref] = auth["spec"]["secretTargetRef"]
    with pytest.raises(jsonschema.ValidationError):  # secretTargetRef needs a key
        _validator("TriggerAuthentication").validate(
            {**auth, "spec": {"secretTargetRef": [{"parameter": ref["parameter"], "name": "x"}]}}
        )
    job = one(rendered, "Job", "agentkeel-migrate")
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
    deployment = one(rendered, "Deployment", name)
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/live"
    health = {p["name"]: p["containerPort"] for p in container["ports"]}["health"]
    config = one(rendered, "ConfigMap", "agentkeel-config")["data"]
    assert config["AGENTKEEL_HEALTH_ADDRESS"].endswith(f":{health}")
    assert pod["terminationGracePeriodSeconds"] > GRACEFUL_SHUTDOWN.total_seconds() * 2
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    budget = one(rendered, "PodDisruptionBudget", name)
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    scaled = one(rendered, "ScaledObject", name)
    assert scaled["spec"]["scaleTargetRef"]["name"] == name
    [trigger] = scaled["spec"]["triggers"]
    assert trigger["metadata"]["taskQueue"] == queue
    assert trigger["metadata"]["queueTypes"] == kinds
    assert trigger["metadata"]["endpoint"] == config["AGENTKEEL_TEMPORAL_ADDRESS"]
    auth = one(rendered, "TriggerAuthentication", trigger["authenticationRef"]["name"])
    [ref] = auth["spec"]["secretTargetRef"]
    assert (ref["parameter"], ref["name"]) == ("apiKey", "agentkeel-temporal")


def test_the_inference_pool_requests_a_gpu_and_mounts_the_models(
    rendered: list[dict[str, Any]],
) -> None:
    pod = one(rendered, "Deployment", "agentkeel-inference-worker")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    [mount] = [m for m in container["volumeMounts"] if m["mountPath"] != "/tmp"]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    claim = volume["persistentVolumeClaim"]["claimName"]
    assert one(rendered, "PersistentVolumeClaim", claim)
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["HF_HOME"] == mount["mountPath"]


WORKERS = ("agentkeel-cpu-worker", "agentkeel-inference-worker")


def _container_env(docs: list[dict[str, Any]], deployment: str) -> dict[str, str]:
    """The plain variables of a Deployment's container, as KEDA resolves them for a
    trigger's `...FromEnv`: its ConfigMaps' data (envFrom, in order), then its own `env`."""
    [container] = one(docs, "Deployment", deployment)["spec"]["template"]["spec"]["containers"]
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env |= one(docs, "ConfigMap", source["configMapRef"]["name"])["data"]
    env |= {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
    return env


def _versions(docs: list[dict[str, Any]]) -> dict[str, tuple[str, str, str]]:
    """Per worker Deployment: the version its pods poll as (deployment, build id), checked
    as the worker's Settings check it, and the one its trigger scales on."""
    out: dict[str, tuple[str, str, str]] = {}
    for name in WORKERS:
        env = _container_env(docs, name)
        settings = Settings.from_env(env)  # the pair set together, a known behaviour
        [trigger] = one(docs, "ScaledObject", name)["spec"]["triggers"]
        meta = trigger["metadata"]
        scaled = (
            env[meta["workerDeploymentNameFromEnv"]],
            env[meta["workerDeploymentBuildIdFromEnv"]],
        )
        assert scaled == (settings.worker_deployment, settings.worker_build_id), name
        out[name] = (*scaled, settings.worker_versioning)
    return out


def test_both_worker_kinds_poll_as_one_version_and_scale_on_its_backlog(
    rendered: list[dict[str, Any]],
) -> None:
    versions = _versions(rendered)
    [version] = set(versions.values())
    deployment, build_id, behaviour = version
    assert deployment and build_id, "versioning is on in the base"
    assert behaviour == "auto_upgrade"


def test_a_release_sets_its_build_id_once_for_both_kinds_and_their_triggers(
    rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    """An overlay as docs/deployment.md writes it: the image tag and, merged into the
    release ConfigMap, the same build id. Both Deployments roll (the ConfigMap's hashed
    name changes) and both triggers follow, with nothing else to edit."""
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({
            "resources": [os.path.relpath(BASE, tmp_path)],
            "images": [{"name": "agentkeel", "newTag": "1.4.0"}],
            "configMapGenerator": [{
                "name": "agentkeel-release", "behavior": "merge",
                "literals": ["AGENTKEEL_WORKER_BUILD_ID=1.4.0"],
            }],
        })
    )  # fmt: skip
    released = render(tmp_path)
    [version] = set(_versions(released).values())
    assert version[1] == "1.4.0"
    assert version[0] == _versions(rendered)[WORKERS[0]][0], "the deployment name stays"
    for name in WORKERS:
        before = one(rendered, "Deployment", name)["spec"]["template"]["spec"]
        after = one(released, "Deployment", name)["spec"]["template"]["spec"]
        assert before["containers"][0]["envFrom"] != after["containers"][0]["envFrom"], name
        assert after["containers"][0]["image"].endswith(":1.4.0")


def test_the_migrations_job_runs_the_schema_command_and_nothing_else(
    rendered: list[dict[str, Any]],
) -> None:
    from agentkeel.cli.main import COMMANDS

    [container] = one(rendered, "Job", "agentkeel-migrate")["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["args"] == ["migrate"] and "command" not in container  # the image's CLI
    assert "migrate" in COMMANDS

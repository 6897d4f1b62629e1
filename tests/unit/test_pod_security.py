"""Every pod of the Kubernetes base is admitted under the restricted Pod Security Standard,
checked offline: the rules in `tests/support/pod_security.py` (a Python reading of the
standard's v1.32 rules, with no cluster or admission controller) against the rendered base,
whose objects tests/unit/test_kubernetes.py validates against Kubernetes' schemas. Beyond the
standard: the image's numeric user, a read-only root filesystem with /tmp on an emptyDir,
and no Secret defined in the base (it references the ones an overlay provides)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.support.kustomize import BASE, render
from tests.support.paths import ROOT
from tests.support.pod_security import pod_specs, violations


@pytest.fixture(scope="module")
def pods() -> dict[str, dict[str, Any]]:
    return pod_specs(render(BASE))


def _image_user() -> tuple[int, int]:
    [user] = [ln.split()[1] for ln in (ROOT / "Dockerfile").read_text().splitlines()
              if ln.startswith("USER ")]  # fmt: skip
    uid, gid = user.split(":")
    return int(uid), int(gid)


def test_every_pod_is_admitted_under_the_restricted_profile(
    pods: dict[str, dict[str, Any]],
) -> None:
    assert {"Deployment/agentkeel-gateway", "Job/agentkeel-migrate"} <= pods.keys()
    for name, pod in pods.items():
        assert violations(pod) == [], name


def test_pods_run_as_the_images_numeric_user_on_a_read_only_root(
    pods: dict[str, dict[str, Any]],
) -> None:
    uid, gid = _image_user()
    for name, pod in pods.items():
        context = pod["securityContext"]
        assert (context["runAsUser"], context["runAsGroup"]) == (uid, gid), name
        scratch = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
        for container in pod["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True, name
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            assert mounts.get("/tmp") in scratch, f"{name}: /tmp is not an emptyDir"


def test_the_base_defines_no_secret_and_references_the_overlays() -> None:
    docs = render(BASE)
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Secret"] == []
    referenced = {
        source["secretRef"]["name"]
        for pod in pod_specs(docs).values()
        for container in pod["containers"]
        for source in container.get("envFrom", [])
        if "secretRef" in source
    }
    assert referenced == {"agentkeel-secrets"}


BREAKS = [
    (lambda p: p.update(hostNetwork=True), "hostNetwork is set"),
    (lambda p: p["volumes"].append({"name": "h", "hostPath": {"path": "/"}}), "hostPath"),
    (lambda p: p["containers"][0]["securityContext"].update(privileged=True), "privileged"),
    (lambda p: p["containers"][0]["securityContext"].pop("allowPrivilegeEscalation"),
     "allowPrivilegeEscalation"),
    (lambda p: p["containers"][0]["securityContext"].update(capabilities={"drop": ["NET_RAW"]}),
     "drop ALL"),
    (lambda p: p["containers"][0]["securityContext"].update(
        capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN"]}), "adds capabilities"),
    (lambda p: p["securityContext"].pop("seccompProfile"), "seccomp"),
    (lambda p: p["securityContext"].update(runAsNonRoot=False), "runAsNonRoot"),
    (lambda p: p["securityContext"].update(runAsUser=0), "user 0"),
    (lambda p: p["containers"][0].update(ports=[{"containerPort": 80, "hostPort": 80}]),
     "host port"),
]  # fmt: skip


@pytest.mark.parametrize(("break_it", "rule"), BREAKS)
def test_a_pod_that_breaks_a_rule_is_refused(
    pods: dict[str, dict[str, Any]], break_it: Any, rule: str
) -> None:
    pod = copy.deepcopy(pods["Deployment/agentkeel-gateway"])
    break_it(pod)
    found = violations(pod)
    assert any(rule in v for v in found), found

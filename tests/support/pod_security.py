"""The restricted Pod Security Standard's rules (Kubernetes v1.32, the `baseline` rules
included), as the admission controller applies them to a pod spec: a check in Python of
each rule as https://kubernetes.io/docs/concepts/security/pod-security-standards/ writes it,
with no cluster. `violations(pod_spec)` names every rule a pod breaks."""

from __future__ import annotations

from typing import Any

RESTRICTED_VOLUMES = frozenset({
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
    "projected", "secret",
})  # fmt: skip
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
})  # fmt: skip
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t",
                           "container_engine_t"})  # fmt: skip
APPARMOR = frozenset({"RuntimeDefault", "Localhost"})


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        *pod.get("initContainers", []),
        *pod.get("containers", []),
        *pod.get("ephemeralContainers", []),
    ]


def _baseline(pod: dict[str, Any]) -> list[str]:
    out = [f"{k} is set" for k in ("hostNetwork", "hostPID", "hostIPC") if pod.get(k)]
    pod_ctx = pod.get("securityContext", {})
    out += [f"volume {v['name']} is a hostPath" for v in pod.get("volumes", []) if "hostPath" in v]
    for sysctl in pod_ctx.get("sysctls", []):
        if sysctl["name"] not in SAFE_SYSCTLS:
            out.append(f"sysctl {sysctl['name']} is not a safe one")
    for c in _containers(pod):
        ctx = c.get("securityContext", {})
        name = c["name"]
        if ctx.get("privileged"):
            out.append(f"{name} is privileged")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            out.append(f"{name} uses a host port")
        if ctx.get("procMount", "Default") != "Default":
            out.append(f"{name} has an unmasked /proc")
    for where, ctx in [("pod", pod_ctx), *((c["name"], c.get("securityContext", {}))
                                          for c in _containers(pod))]:  # fmt: skip
        selinux = ctx.get("seLinuxOptions", {})
        if selinux.get("type", "") not in SELINUX_TYPES or {"user", "role"} & selinux.keys():
            out.append(f"{where} sets SELinux options beyond the allowed")
        apparmor = ctx.get("appArmorProfile", {}).get("type")
        if apparmor is not None and apparmor not in APPARMOR:
            out.append(f"{where} has AppArmor profile {apparmor}")
        if ctx.get("seccompProfile", {}).get("type") == "Unconfined":
            out.append(f"{where} is seccomp Unconfined")
    return out


def _restricted(pod: dict[str, Any]) -> list[str]:
    out = []
    pod_ctx = pod.get("securityContext", {})
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            out.append(f"volume {volume['name']} is of type {sorted(kinds)}")
    if pod_ctx.get("runAsUser") == 0:
        out.append("the pod runs as user 0")
    for c in _containers(pod):
        ctx = c.get("securityContext", {})
        name = c["name"]
        if ctx.get("allowPrivilegeEscalation") is not False:
            out.append(f"{name} does not set allowPrivilegeEscalation: false")
        if not ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")):
            out.append(f"{name} may run as root (runAsNonRoot)")
        if ctx.get("runAsUser") == 0:
            out.append(f"{name} runs as user 0")
        seccomp = ctx.get("seccompProfile", pod_ctx.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{name} has no RuntimeDefault or Localhost seccomp profile")
        caps = ctx.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            out.append(f"{name} does not drop ALL capabilities")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            out.append(f"{name} adds capabilities {sorted(caps['add'])}")
    return out


def violations(pod: dict[str, Any]) -> list[str]:
    """Every restricted-profile rule `pod` (a PodSpec) breaks; empty when it is admitted."""
    return _baseline(pod) + _restricted(pod)


def pod_specs(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The pod spec of each workload (Deployment, Job, ...) among rendered objects, by
    `Kind/name`."""
    return {
        f"{doc['kind']}/{doc['metadata']['name']}": doc["spec"]["template"]["spec"]
        for doc in docs
        if "spec" in doc.get("spec", {}).get("template", {})
    }

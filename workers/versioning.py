"""Temporal worker versioning, opt in (`AGENTKEEL_WORKER_DEPLOYMENT`, `_BUILD_ID`).

Both kinds of worker of one release poll as the same worker deployment version, so a run's
activities on the inference queue go to the release that runs its workflow. Runs move
between versions as `AGENTKEEL_WORKER_VERSIONING` says: `auto_upgrade` to the current
version at their next workflow task, or `pinned` to the version that started them. Which
version is current is the operator's call (`temporal worker deployment
set-current-version`), after the new release's workers are ready; see docs/deployment.md.
"""

from __future__ import annotations

from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

from agentkeel.settings.model import Settings

BEHAVIOURS = {
    "auto_upgrade": VersioningBehavior.AUTO_UPGRADE,
    "pinned": VersioningBehavior.PINNED,
}


def deployment_config(settings: Settings) -> WorkerDeploymentConfig | None:
    """The workers' deployment version, or None for unversioned workers (the default)."""
    if not settings.worker_deployment:
        return None
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(settings.worker_deployment, settings.worker_build_id),
        use_worker_versioning=True,
        # Every workflow of the CPU worker alike: none declares a behaviour of its own.
        default_versioning_behavior=BEHAVIOURS[settings.worker_versioning],
    )

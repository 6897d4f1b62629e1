"""The path cache's layout in Redis: the contract between the workers, which write whole
runs there, and the clients, whose fast path reads the exact tier without a workflow.

Both sides name a path by `path_key` and read it as a `PathEntry`; the workers publish the
cache version they serve under `served_version_key` (`activities.cache.served_version`
writes it, `client.served_version` reads it).

Hash tags (`tenant_tag`) keep each tenant's cache keys in one Redis Cluster slot. A Lua
script or a multi-key command on a cluster must name keys of one slot only: a path's `put`
writes its entry, and the changed-markers and index sets of the entities it read, in one
script. Every cache key of a tenant (paths, tool results, entity markers and index sets,
reading pointers) carries the tenant's tag, so they share a slot; on a single server the
tag is only part of the name. The tag is a digest, so no tenant name can end it early (`}`)
or collide with another's key: the key names the tenant in full besides. The cost: one
tenant's cache lives on one cluster node; a fleet with one huge tenant does not spread its
cache over the cluster (tenants spread, one tenant does not).
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel

from agentkeel.schemas.actor import SYSTEM_ACTOR
from agentkeel.schemas.cache_lookup import normalize_question
from agentkeel.schemas.result import AgentResult

__all__ = [
    "PATH_KEY_PREFIX",
    "WITHDRAWN",
    "PathEntry",
    "path_key",
    "served_version_key",
    "tenant_tag",
]

PATH_KEY_PREFIX = "agentkeel:path:v4"
"""v4: keys carry their tenant's slot tag (`tenant_tag`); v3 keys are never read again."""
SERVED_KEY_PREFIX = "agentkeel:served:v1"
WITHDRAWN = "withdrawn"
"""The served version's value while the workers' catalog changes: serve nothing."""


class PathEntry(BaseModel):
    question: str
    result: AgentResult
    answer_fresh_until: float | None = None
    """Epoch seconds until which the answer may be served; after it, only the plan."""


def tenant_tag(tenant: str) -> str:
    """`{<digest>}`: the part of a key Redis Cluster hashes, the same for all of a tenant's."""
    return "{" + hashlib.sha256(tenant.encode()).hexdigest()[:16] + "}"


def path_key(
    tenant: str,
    question: str,
    version: str,
    conversation_id: str | None = None,
    audience: str = SYSTEM_ACTOR.audience,
) -> str:
    """Within a conversation the same words may mean something else: it is part of the key.
    So is the audience: a run is served only to actors who may see what it saw."""
    asked = normalize_question(question) + ("\x1f" + conversation_id if conversation_id else "")
    digest = hashlib.sha256(asked.encode()).hexdigest()[:32]
    return f"{PATH_KEY_PREFIX}:{tenant_tag(tenant)}:{version}:{tenant}:{audience}:{digest}"


def served_version_key(task_queue: str, namespace: str = "default") -> str:
    """Per Temporal namespace and task queue: deployments sharing one Redis stay apart."""
    return f"{SERVED_KEY_PREFIX}:{{{namespace}}}:{task_queue}"

"""Hash tags that keep each tenant's cache keys in one Redis Cluster slot.

A Lua script or a multi-key command on a cluster must name keys of one slot only: a path's
`put` writes its entry, and the changed-markers and index sets of the entities it read,
in one script. Every cache key of a tenant (paths, tool results, entity markers and index
sets, reading pointers) carries the tenant's tag, so they share a slot; on a single server
the tag is only part of the name. The tag is a digest, so no tenant name can end it early
(`}`) or collide with another's key: the key names the tenant in full besides.

The cost: one tenant's cache lives on one cluster node; a fleet with one huge tenant does
not spread its cache over the cluster (tenants spread, one tenant does not).
"""

from __future__ import annotations

import hashlib


def tenant_tag(tenant: str) -> str:
    """`{<digest>}`: the part of a key Redis Cluster hashes, the same for all of a tenant's."""
    return "{" + hashlib.sha256(tenant.encode()).hexdigest()[:16] + "}"

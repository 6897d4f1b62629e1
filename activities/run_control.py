"""What a run asks its CPU worker about itself: the approval policy, and its cancellation.

Both are local activities: the workflow reads the worker's approval thresholds once per
run (recorded in history, so replays see the same), and a cancelled run closes its token
stream so readers stop waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis
from temporalio import activity

from agentkeel.activities.token_stream import TokenStream
from agentkeel.schemas import names
from agentkeel.schemas.approvals import ApprovalPolicy, ApprovalPolicyInput
from agentkeel.schemas.tokens import CancellationNotice


class RunControlActivities:
    def __init__(self, policy: ApprovalPolicy, redis: aioredis.Redis | None) -> None:
        self._policy = policy
        self._redis = redis

    def all_activities(self) -> list[Callable[..., Any]]:
        return [self.approval_policy, self.announce_cancellation]

    @activity.defn(name=names.APPROVAL_POLICY)
    async def approval_policy(self, request: ApprovalPolicyInput) -> ApprovalPolicy:
        """The same thresholds for every tenant today; the input leaves room for more."""
        return self._policy

    @activity.defn(name=names.ANNOUNCE_CANCELLATION)
    async def announce_cancellation(self, notice: CancellationNotice) -> None:
        stream = TokenStream.for_run(self._redis, notice.workflow_id, notice.run_id, attempt=0)
        await stream.cancelled()

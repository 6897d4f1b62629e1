"""Planning beside the router: the heavy planner starts with the route, not after it.

An unsure route costs two model stages in a row (route, then plan). Where the router has
lately been unsure for a tenant, the route activity starts the planner at once, on the
question alone, and cancels it if the router turns out confident: the run then pays
max(route, plan) instead of route + plan, and one activity round trip instead of two.
The price is a plan started in vain for a confident request of such a tenant; the
forecast keeps that rare (it plans ahead only while most recent routes were unsure).
With a store (`activities.forecast_store`, in Redis), the forecast is the fleet's: every
inference worker records its routes there, and one that has not seen a tenant lately
reads them, so a new or restarted worker plans ahead from its first request. A tenant
with too few routes of its own is forecast from its deployment's (every tenant's routes),
and a deployment with too few from `unseen` (by default ahead, for at most `SEEN_ENOUGH`
routes at a time per worker: until the deployment has routed that often, a few plans may
be cancelled, where waiting would cost each such run a whole model stage).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from agentkeel.activities.forecast_store import ForecastStore
from agentkeel.inference.llm.cascade import count_override
from agentkeel.schemas.choices import PlanAhead as PlanAhead
from agentkeel.schemas.choices import PlanAheadUnseen
from agentkeel.schemas.route import STAND_IN_INTENT, ConfidenceBasis, Route, Tier

AHEAD_ROUTE = Route(
    intent=STAND_IN_INTENT,
    confidence=0.0,
    basis=ConfidenceBasis.UNMEASURED,
    tier=Tier.HEAVY,
    reason="planned beside the router, from the request alone",
)
"""What the planner is told of the route when it starts before the router answers: it
reads the request itself (as the heavy tier always does). Its own route is then told
against the router's (`beside`), as if it had planned after it."""


def beside(router: Route, planned: Route) -> Route:
    """The route of a plan made beside `router`: the planner's own reading and tier, the
    router's intent, confidence and basis as the router measured them (not the stand-in
    the planner was given), and an override only where the two readings differ."""
    overridden = router.intent if planned.intent != router.intent else None
    reason = f"planned {planned.intent} beside the router"
    if router.reason:  # the router's own account first, as after a plan made after it
        reason = f"{router.reason}; {reason}"
    if overridden is not None:
        reason += f", overriding the router's {overridden} ({router.confidence_told})"
        count_override(overridden, planned.intent)
    return planned.model_copy(
        update={
            "confidence": router.confidence,
            "basis": router.basis,
            "router_intent": router.intent,
            "overridden_intent": overridden,
            "reason": reason,
        }
    )


SEEN_ENOUGH = 3
"""Routes a history needs before the forecast goes by it; also the most plans a worker
starts ahead at once on `unseen` alone, per deployment (a burst of first requests to a new
deployment plans ahead for a few, not for all)."""

REFRESH_S = 2.0
"""How long a worker trusts its copy of a tenant's shared history before reading it again
(in the background: a route never waits for a refresh)."""

Release = Callable[[object], None]
"""Called once the plan started ahead is done (a task's done callback)."""


def _nothing_held(_: object) -> None:
    return None


class UnsureForecast:
    """Whether the next route of a tenant is likely to be unsure, from its last routes."""

    def __init__(
        self,
        mode: PlanAhead = "auto",
        *,
        above: float = 0.5,
        window: int = 20,
        tenants: int = 1024,
        unseen: PlanAheadUnseen = "ahead",
        store: ForecastStore | None = None,
    ) -> None:
        """`unseen`: what `auto` does where neither the tenant nor its deployment has
        routed `SEEN_ENOUGH` times; `store`: the fleet's shared history (None: this
        process's memory alone)."""
        self.mode = mode
        self.above = above
        self.unseen = unseen
        self.store = store
        self._window = window
        self._tenants = tenants
        # Keyed by (deployment scope, tenant): a tenant's routes on one task queue say
        # nothing of another's, and a refresh reads both of that scope's lists.
        self._recent: dict[tuple[str, str], deque[bool]] = {}
        self._deployments: dict[str, deque[bool]] = {}
        self._read_at: dict[tuple[str, str], float] = {}
        self._refreshing: set[tuple[str, str]] = set()
        self._unseen_ahead: dict[str, int] = {}
        self._background: set[asyncio.Task[None]] = set()  # held until done (asyncio's rule)

    async def ready(self, scope: str, tenant: str) -> None:
        """Bring this tenant's history and its deployment's from the store before
        `expects_unsure` decides: read and waited for (briefly) when this worker has none
        for the tenant, refreshed in the background when its copy is older than
        `REFRESH_S`."""
        if self.mode != "auto" or self.store is None:
            return
        key = (scope, tenant)
        read_at = self._read_at.get(key)
        if read_at is None:
            await self._refresh(scope, tenant)
        elif time.monotonic() - read_at > REFRESH_S and key not in self._refreshing:
            self._refreshing.add(key)
            task = asyncio.get_running_loop().create_task(self._refresh(scope, tenant))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def expects_unsure(self, tenant: str, scope: str) -> bool:
        """By the tenant's last routes; where it has too few, by its deployment's (`scope`);
        where that has too few too, by `unseen`."""
        if self.mode != "auto":
            return self.mode == "always"
        by_history = self._by_history(tenant, scope)
        return self.unseen == "ahead" if by_history is None else by_history

    def plan_ahead(self, tenant: str, scope: str) -> Release | None:
        """Whether to start the planner beside this route: None where not; else what to call
        once that plan is done (it frees the place of a plan started on `unseen` alone)."""
        if self.mode != "auto":
            return _nothing_held if self.mode == "always" else None
        by_history = self._by_history(tenant, scope)
        if by_history is not None:
            return _nothing_held if by_history else None
        held = self._unseen_ahead.get(scope, 0)
        if self.unseen != "ahead" or held >= SEEN_ENOUGH:
            return None
        self._unseen_ahead[scope] = held + 1

        def release(_: object) -> None:
            self._unseen_ahead[scope] -= 1

        return release

    def observe(self, tenant: str, unsure: bool, *, scope: str) -> None:
        self._history(scope, tenant).append(unsure)
        self._deployment(scope).append(unsure)
        if self.store is not None and self.mode == "auto":
            self.store.record(scope, tenant, unsure)

    def _by_history(self, tenant: str, scope: str) -> bool | None:
        """What the tenant's routes say, else its deployment's; None where both are short."""
        enough = min(SEEN_ENOUGH, self._window)
        for recent in (self._recent.get((scope, tenant)), self._deployments.get(scope)):
            if recent is not None and len(recent) >= enough:
                return sum(recent) / len(recent) > self.above
        return None

    def _deployment(self, scope: str) -> deque[bool]:
        recent = self._deployments.get(scope)
        if recent is None:  # one per task queue this worker serves: a handful
            recent = self._deployments[scope] = deque(maxlen=self._window)
        return recent

    def _history(self, scope: str, tenant: str) -> deque[bool]:
        key = (scope, tenant)
        recent = self._recent.get(key)
        if recent is None:
            if len(self._recent) >= self._tenants:  # bounded: the oldest tenant goes
                oldest = next(iter(self._recent))
                self._recent.pop(oldest)
                self._read_at.pop(oldest, None)
            recent = self._recent[key] = deque(maxlen=self._window)
        return recent

    async def _refresh(self, scope: str, tenant: str) -> None:
        assert self.store is not None
        try:
            shared = await self.store.histories(scope, tenant)
        finally:
            self._refreshing.discard((scope, tenant))
        self._read_at[(scope, tenant)] = time.monotonic()
        if shared is None:
            return
        # The fleet's histories, this worker's own routes included.
        for history, outcomes in (
            (self._history(scope, tenant), shared[0]),
            (self._deployment(scope), shared[1]),
        ):
            if outcomes:
                history.clear()
                history.extend(outcomes)

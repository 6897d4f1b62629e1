"""A circuit breaker, so a dead dependency costs one timeout, not one per request."""

from __future__ import annotations

import time
from collections.abc import Callable


class CircuitBreaker:
    """Closed → (failure) → open for `reset_after_s` → half-open: one trial call decides.

    Not thread-safe; one per event loop (per worker process) is the intended use.
    """

    def __init__(
        self, *, reset_after_s: float = 5.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.reset_after_s = reset_after_s
        self._clock = clock
        self._opened_at: float | None = None
        self._trial_in_flight = False

    @property
    def is_open(self) -> bool:
        return self._opened_at is not None

    def allow(self) -> bool:
        """Whether a call may go to the dependency now."""
        if self._opened_at is None:
            return True
        if self._trial_in_flight or self._clock() - self._opened_at < self.reset_after_s:
            return False
        self._trial_in_flight = True  # half-open: let exactly one call find out
        return True

    def release_trial(self) -> None:
        """The trial call ended without an answer (cancelled): let a later call try."""
        self._trial_in_flight = False

    def record_success(self) -> None:
        self._opened_at = None
        self._trial_in_flight = False

    def record_failure(self) -> None:
        self._opened_at = self._clock()
        self._trial_in_flight = False

"""An IT helpdesk, written against agentkeel's public API alone: the seam's second domain.

Unlike the shop: tickets and services instead of orders, a side effect that moves no money
but always needs an approval (`restart_service`), employees who see their own tickets
only, a downstream with a cap of one, and a planner of patterns instead of a rules policy.
"""

from helpdesk_domain.domain import domain, seed

__all__ = ["domain", "seed"]

"""A conditional step (`when`) in a real run: the rules answer where an unshipped order is
from the order alone."""

from __future__ import annotations

from agentkeel.schemas.result import StepStatus
from tests.support.agent_stack import AgentStack


async def test_where_is_an_unshipped_order_answers_from_the_order(stack: AgentStack) -> None:
    """Before `when`, this planned a tracking lookup with a null number: InvalidArguments."""
    result = await stack.ask("Where is order 1002?")
    order, track = result.steps
    assert order.status == StepStatus.SUCCEEDED and order.output["status"] == "processing"
    assert track.status == StepStatus.SKIPPED and track.error is None
    assert track.skipped_because == "$s1.tracking_number is absent"
    assert result.plan_error is None and result.replans == 0
    assert "Order 1002 is processing" in result.answer
    assert "could not" not in result.answer

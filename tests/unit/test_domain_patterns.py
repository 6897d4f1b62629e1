"""A domain's `PlanPattern`s checked when it is built, its plans held to a run's rules by
`agentkeel.testing`, and a refused pattern plan reported as refused.

Each planted mistake (a misspelt tool, a wrong argument, an undeclared intent, a wrong
`$ref` field, ...) stops the domain at construction with one line naming the pattern, the
step, the field and what would be valid; the worker refuses to start with that line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agentkeel import (
    Actor,
    Domain,
    DomainError,
    McpServer,
    PlanPattern,
    Role,
    ToolArgs,
    pattern_policy,
    tool,
)
from agentkeel.inference.answers import render_answer
from agentkeel.schemas import model_calls as calls
from agentkeel.schemas.plan.model import Plan
from agentkeel.schemas.result import StepError
from agentkeel.testing import check_plan
from tests.support.paths import DOMAINS, ROOT


class ItemArgs(ToolArgs):
    item_id: int


class Item(BaseModel):
    item_id: int
    owner: str
    status: str


@tool(trusted_fields=("item_id",))
async def get_item(args: ItemArgs) -> Item:
    """Get an item."""
    return Item(item_id=args.item_id, owner="ada", status="open")


@tool(side_effect=True, needs_approval=True, identity_args=("item_id",))
async def close_item(args: ItemArgs) -> Item:
    """Close an item."""
    return Item(item_id=args.item_id, owner="ada", status="closed")


READ = {"id": "read", "tool": "get_item", "args": {"item_id": "{item}"}}
CLOSE = {"id": "close", "tool": "close_item", "args": {"item_id": "$read.item_id"}}
INTENTS = {"status": ("get_item",), "close": ("get_item", "close_item")}


def _domain(*patterns: PlanPattern, **fields: Any) -> Domain:
    return Domain(
        name="notes",
        tools=(get_item, close_item),
        persona="p",
        intents=INTENTS,
        roles=(
            Role("member", "own items", scoped=True),
            Role("admin", "all", may_approve=True, may_send_plans=True),
        ),
        rules_policy=pattern_policy(*patterns),
        **fields,
    )


def _close(*steps: dict[str, Any], intent: str = "close") -> PlanPattern:
    return PlanPattern(intent, r"\bclose item (?P<item>\d+)", list(steps))


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (
            _close(READ, {**CLOSE, "tool": "clse_item"}),
            "pattern 'close' (#1, /\\bclose item (?P<item>\\d+)/): step 2 (close) tool "
            "'clse_item' is not in the catalog; known tools: close_item, get_item, wait",
        ),
        (
            _close(READ, {**CLOSE, "args": {"itemid": "$read.item_id"}}),
            "step 2 (close) tool close_item has no argument 'itemid'; its arguments: item_id",
        ),
        (
            _close(READ, CLOSE, intent="closing"),
            "intent 'closing' is not an intent of the domain; known intents: close, status",
        ),
        (
            _close(READ, {**CLOSE, "args": {"item_id": "$read.itemid"}}),
            "step 2 (close) item_id: $read.itemid: Item has no field 'itemid' "
            "(has item_id, owner, status)",
        ),
        (
            _close(READ, {**CLOSE, "args": {"item_id": "$red.item_id"}}),
            "step 2 (close) item_id: $red.item_id names no other step of the pattern; "
            "its steps: read",
        ),
        (
            _close(READ, {**CLOSE, "args": {"item_id": "$read.owner"}}),
            "step 2 (close) item_id: argument item_id expects int but $read.owner is str",
        ),
        (
            _close({**READ, "args": {"item_id": "{itme}"}}),
            "step 1 (read) fills {itme}, which is not a group of the regular expression; "
            "its named groups: item",
        ),
        (
            _close(READ, CLOSE, intent="status"),
            "step 2 (close) tool 'close_item' is a side effect intent 'status' does not list, "
            "so every run would refuse it (SideEffectNotRequested); the intent lists: get_item",
        ),
        (
            _close({**READ, "args": {}}),
            "step 1 (read) tool get_item needs argument 'item_id'",
        ),
    ],
    ids=[
        "misspelt-tool",
        "wrong-argument",
        "undeclared-intent",
        "wrong-ref-field",
        "ref-to-no-step",
        "ref-of-wrong-type",
        "unknown-group",
        "effect-outside-intent",
        "missing-argument",
    ],
)
def test_a_planted_mistake_stops_the_domain_in_one_line_naming_what_is_valid(
    pattern: PlanPattern, message: str
) -> None:
    with pytest.raises(DomainError) as raised:
        _domain(pattern)
    said = str(raised.value)
    assert "\n" not in said
    assert said.startswith("domain notes: pattern '")
    assert said.endswith(message)


def test_the_bundled_domains_and_a_sound_pattern_load() -> None:
    sound = _domain(
        _close(READ, CLOSE),
        PlanPattern("status", r"item (\d+)", [READ | {"args": {"item_id": "{1}"}}]),
    )
    assert sound.name == "notes"
    from agentkeel.examples.shop import domain as shop

    assert shop.name == "shop"
    sys.path.insert(0, str(DOMAINS))
    try:
        import helpdesk_domain
        from mcp_domain import domain as mcp_domain

        assert helpdesk_domain.domain.name == "helpdesk"
        assert mcp_domain().name == "mcpdemo"
    finally:
        sys.path.remove(str(DOMAINS))


def test_a_tool_of_its_own_mcp_server_is_checked_once_the_worker_lists_it() -> None:
    listed_later = PlanPattern(
        "close", r"forget (?P<item>\w+)", [{"id": "s1", "tool": "tb_lokup", "args": {}}]
    )
    server = McpServer(name="tb", command=sys.executable)
    domain = _domain(listed_later, mcp_servers=(server,))  # not listed yet: left for later
    with pytest.raises(DomainError, match=r"tool 'tb_lokup' is not in the catalog; known tools"):
        domain.check_patterns()  # what the worker does with the tools its servers list


def test_the_worker_refuses_to_start_with_the_one_line(tmp_path: Path) -> None:
    (tmp_path / "planted.py").write_text(
        "from tests.unit.test_domain_patterns import CLOSE, READ, _close, _domain\n"
        "domain = _domain(_close(READ, {**CLOSE, 'tool': 'clse_item'}))\n"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENTKEEL_")},
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
        "AGENTKEEL_DOMAIN": "planted:domain",
    }
    started = subprocess.run(
        [sys.executable, "-m", "agentkeel.workers", "cpu"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert started.returncode == 1
    lines = started.stderr.strip().splitlines()
    assert len(lines) == 1, started.stderr
    assert "pattern 'close'" in lines[0]
    assert lines[0].endswith(
        "step 2 (close) tool 'clse_item' is not in the catalog; "
        "known tools: close_item, get_item, wait)"
    )


def test_the_testing_helper_holds_a_plan_to_the_runs_rules() -> None:
    domain = _domain(_close(READ, CLOSE))
    ada = Actor(role="member", subject="ada")
    checked = check_plan(domain, "Close item 2", actor=ada)
    assert checked.refused is None and checked.tools == ["get_item", "close_item"]
    close = checked.effect("close_item")
    assert close.refused is None and close.origins["item_id"].trusted
    assert close.approval == "close_item always needs an approval"
    # A target only the plan wrote (no trusted field, no word of the request) is refused,
    # as the workflow refuses it.
    caller = Plan.model_validate(
        {"steps": [{"id": "s1", "tool": "close_item", "args": {"item_id": 7}}]}
    )
    given = check_plan(domain, "nightly close", actor=ada, plan=caller)
    assert given.refused is not None and given.refused.type == "NotAuthorized"
    admin = check_plan(domain, "nightly close", actor=Actor(role="admin", name="cron"), plan=caller)
    assert admin.refused is None and admin.effect("close_item").refused is None
    nobody = check_plan(domain, "Close item 2", actor=Actor(role="member"))
    assert nobody.refused is not None and nobody.refused.type == "InvalidRequest"
    unmatched = check_plan(domain, "good morning")
    assert unmatched.refused is not None and unmatched.refused.type == "NoPlanner"


def test_an_untrusted_target_is_refused_by_the_helper_as_by_the_run() -> None:
    untrusted = Domain(
        name="loose",
        tools=(dataclasses.replace(get_item, trusted_fields=()), close_item),
        persona="p",
        intents=INTENTS,
        rules_policy=pattern_policy(_close(READ, CLOSE)),
    )
    close = check_plan(untrusted, "Close item 2").effect("close_item")
    assert close.refused is not None and close.refused.type == "UntrustedArgument"
    assert "$s1.item_id is get_item output" in close.refused.message


def test_a_pattern_plan_the_run_refused_is_answered_as_refused_not_as_no_match() -> None:
    policy = _domain(_close(READ, CLOSE))
    assert policy.rules_policy is not None
    planner = policy.rules_policy(0.7)
    refused = StepError(
        type="UnknownTool", message="step s1: unknown tool 'x' (known: ...)", non_retryable=True
    )
    plan = Plan.model_validate({"steps": [READ | {"id": "s1", "args": {"item_id": 2}}]})
    joined = asyncio.run(
        planner.join(
            calls.JoinInput(question="Close item 2", plan=plan, steps=[], plan_error=refused)
        )
    )
    assert joined.decision is calls.JoinDecision.FINISH
    assert "UnknownTool" in joined.reason
    route = asyncio.run(planner.route(calls.RouteInput(question="Close item 2"))).route
    again = asyncio.run(
        planner.plan(calls.PlanInput(question="Close item 2", route=route, plan_error=refused))
    )
    assert again.error == refused
    answer = render_answer(
        calls.RespondInput(question="Close item 2", route=route, steps=[], plan_error=refused)
    )
    assert "UnknownTool: step s1: unknown tool 'x'" in answer
    assert "no pattern" not in answer


def test_a_pattern_may_list_a_step_before_the_step_it_reads() -> None:
    """The plan's order is not the DAG's: a step may read one listed after it, as the
    workflow's plan check allows; only a step reading itself is refused."""
    _domain(_close(CLOSE, READ))
    with pytest.raises(DomainError, match="names no other step"):
        _domain(_close({**READ, "args": {"item_id": "$read.item_id"}}, CLOSE))

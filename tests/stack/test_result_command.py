"""`agentkeel result WORKFLOW_ID`: a finished run's answer without starting another; a run
still going or unknown is said so, with its exit status."""

from __future__ import annotations

import argparse
import json

import pytest

from agentkeel.cli.result import show_result
from agentkeel.settings.model import Settings
from tests.support.agent_stack import AgentStack


def _settings(stack: AgentStack) -> Settings:
    address = stack.client.service_client.config.target_host
    return stack.settings.model_copy(update={"temporal_address": address})


def _args(workflow_id: str, *, json_output: bool = False) -> argparse.Namespace:
    return argparse.Namespace(
        command="result", workflow_id=workflow_id, run_id=None, json=json_output
    )


async def test_result_prints_a_finished_runs_answer_as_ask_does_or_its_json(
    stack: AgentStack, capsys: pytest.CaptureFixture[str]
) -> None:
    handle = await stack.start("Where is order 1001?")
    answered = await handle.result()
    settings = _settings(stack)

    assert await show_result(settings, _args(handle.id)) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"  {answered.answer}\n")
    assert "route: order_status" in text
    assert "get_order" in text and "ok " in text and "started at +" in text

    assert await show_result(settings, _args(handle.id, json_output=True)) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["answer"] == answered.answer and shown["workflow_id"] == handle.id


async def test_result_of_a_run_still_going_or_of_none_says_so(
    stack: AgentStack, capsys: pytest.CaptureFixture[str]
) -> None:
    watching = await stack.start("Tell me when order 1002 ships", options={"watch_every_s": 60})
    settings = _settings(stack)
    assert await show_result(settings, _args(watching.id)) == 3
    assert f"run {watching.id} (" in capsys.readouterr().err
    await watching.terminate("test over")

    assert await show_result(settings, _args("no-such-run")) == 1
    assert "agentkeel result: no-such-run: " in capsys.readouterr().err

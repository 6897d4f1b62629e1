"""Schedules the tests make: the question they ask, and their removal at teardown."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client, ScheduleActionExecutionStartWorkflow
from temporalio.service import RPCError, RPCStatusCode

QUESTION = "Where is order 1001?"


@pytest.fixture
async def schedule_ids(client: Client) -> AsyncIterator[list[str]]:
    """Ids a test creates: at teardown each is deleted and the runs it started terminated.

    Request it after `stack`, so this teardown runs while the stack's workers still do.
    """
    ids: list[str] = []
    yield ids
    for schedule_id in ids:
        handle = client.get_schedule_handle(schedule_id)
        try:
            running = (await handle.describe()).info.running_actions
            await handle.delete()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            continue
        for action in running:
            assert isinstance(action, ScheduleActionExecutionStartWorkflow)
            try:
                await client.get_workflow_handle(action.workflow_id).terminate("test teardown")
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise


async def _exists(client: Client, schedule_id: str) -> bool:
    try:
        await client.get_schedule_handle(schedule_id).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True

"""A team's own workflow and activity, in a module of their own as a team keeps them: the
workflow sandbox re-imports the module that defines a workflow, so it imports nothing but
Temporal."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="team_greet")
async def team_greet(name: str) -> str:
    return f"hello {name}"


@workflow.defn(name="TeamGreeting")
class TeamGreeting:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(
            team_greet, name, start_to_close_timeout=timedelta(seconds=10)
        )

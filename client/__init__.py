"""The client side: `AgentClient` for services, the token-stream reader, terminal reports.

Imports no LangGraph and no policy code: a service that only starts runs loads only what
it needs to talk to Temporal and Redis.
"""

from agentkeel.client.agent_client import AgentClient
from agentkeel.client.program import run_program

__all__ = ["AgentClient", "run_program"]

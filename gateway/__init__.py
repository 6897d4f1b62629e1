"""The HTTP/SSE gateway onto `AgentWorkflow` (`agentkeel gateway`)."""

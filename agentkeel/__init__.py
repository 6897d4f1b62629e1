"""agentkeel: a durable agent orchestrator on Temporal."""

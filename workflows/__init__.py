"""agentkeel workflows."""

"""agentkeel inference."""

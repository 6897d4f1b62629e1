"""agentkeel workers."""

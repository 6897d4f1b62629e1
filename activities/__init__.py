"""agentkeel activities."""

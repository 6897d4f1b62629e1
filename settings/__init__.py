"""Typed settings, read once in main() and injected (`Settings.from_env()`), and what a
process builds from them at start: its connections (Temporal, Postgres, Redis), the served
domain with its MCP tools, structured logs, traces, metrics, the event loop and the search
attributes of its namespace. Every program (workers, gateway, CLI) and the client share it.
"""

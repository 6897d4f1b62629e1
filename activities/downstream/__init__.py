"""Protecting the services behind the tools: global caps, shared reads, merged calls."""

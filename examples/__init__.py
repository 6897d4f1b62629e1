"""Example domains served by agentkeel: outside the core, which never imports them."""

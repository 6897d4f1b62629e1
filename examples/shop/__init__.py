"""The example shop domain: `AGENTKEEL_DOMAIN=agentkeel.examples.shop:domain` (the default)."""

from agentkeel.examples.shop.domain import domain

__all__ = ["domain"]

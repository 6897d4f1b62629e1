"""The cache engine: Redis backend and breaker, the path cache and its tiers, tool results."""

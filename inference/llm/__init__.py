"""The LLM-backed policy: prompts, context budget, constrained plans, the router cascade."""

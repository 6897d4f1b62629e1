"""The shop's rules policy: deterministic intents, plan templates and rendered answers."""

"""The rules policy: deterministic intents, plan templates and answers for the demo shop."""

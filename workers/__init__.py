"""The worker runtime: the CPU and inference worker processes (`python -m agentkeel.workers
cpu|inference`), their Temporal client and plugin, resources, readiness and registrations."""

"""The DAG engine of the `execute` node: the scheduler and tool dispatch (workflow-safe)."""

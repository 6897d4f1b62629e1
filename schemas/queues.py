"""Task queue names: part of the public contract, derived in one place."""

from __future__ import annotations

TASK_QUEUE = "agentkeel"
"""`AgentWorkflow`, tools, cache and persistence (the CPU worker)."""
INFERENCE_QUEUE_SUFFIX = "-inference"


def inference_queue(task_queue: str) -> str:
    """Route / plan / join / respond run on `<task queue>-inference`: a deployment on queue X
    always pairs with X-inference, so workflow and workers can never disagree."""
    return task_queue + INFERENCE_QUEUE_SUFFIX

"""Language-model engines behind one protocol (see `protocol`).

Only the protocol is re-exported: the concrete engines import heavy optional packages
(`vllm`, `openai`) when used, so import them from their modules.
"""

from agentkeel.inference.engines.protocol import (
    ChoiceConstraint,
    Constraint,
    ConstraintViolationError,
    Engine,
    EngineError,
    EngineRequestError,
    EngineUnavailableError,
    GenerateRequest,
    GenerateResult,
    JsonSchemaConstraint,
    TokenDelta,
    TokenLogprob,
    Usage,
)

__all__ = [
    "ChoiceConstraint",
    "Constraint",
    "ConstraintViolationError",
    "Engine",
    "EngineError",
    "EngineRequestError",
    "EngineUnavailableError",
    "GenerateRequest",
    "GenerateResult",
    "JsonSchemaConstraint",
    "TokenDelta",
    "TokenLogprob",
    "Usage",
]

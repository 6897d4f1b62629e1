"""The JSON Schemas of the public contract, for code generation in other languages.

`python -m agentkeel.schemas.export` writes them to `schemas/json/`; a test checks they match the
models, so the published files never drift from what the workflow and gateway accept.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from agentkeel.schemas.approvals import ApprovalAnswer, ApprovalDecision
from agentkeel.schemas.gateway import BudgetProblem, GatewayApproval, QuotaProblem, RunView
from agentkeel.schemas.progress import RunProgress
from agentkeel.schemas.request import AgentRequest
from agentkeel.schemas.result import AgentResult

PUBLISHED: dict[str, tuple[type[BaseModel], str]] = {
    "agent_request": (AgentRequest, "validation"),
    "agent_result": (AgentResult, "serialization"),
    "run_progress": (RunProgress, "serialization"),
    "approval_decision": (ApprovalDecision, "validation"),
    "approval_answer": (ApprovalAnswer, "serialization"),
    "gateway_run_view": (RunView, "serialization"),
    "gateway_approval": (GatewayApproval, "validation"),
    "gateway_quota_problem": (QuotaProblem, "serialization"),
    "gateway_budget_problem": (BudgetProblem, "serialization"),
}
OUT_DIR = Path(__file__).parent / "json"


def rendered() -> dict[str, str]:
    """File name -> content of every published schema."""
    files = {}
    for name, (model, mode) in PUBLISHED.items():
        schema = model.model_json_schema(mode=mode)  # type: ignore[arg-type]
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
        files[f"{name}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return files


def main() -> int:
    OUT_DIR.mkdir(exist_ok=True)
    for name, text in rendered().items():
        (OUT_DIR / name).write_text(text)
        print(OUT_DIR / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

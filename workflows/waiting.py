"""What a run waits on, shown to ops: `progress.waiting`, current details, `AgentWaiting`.

Timers (`wait` steps) and watches between two runs report here. While anything waits the
run carries `AgentWaiting = true` (the Web UI filters on it; `agentkeel watches` lists
them) and its current details say what and until when; the attribute is unset when the
last wait ends, so a finished run is never listed as waiting.
"""

from __future__ import annotations

from temporalio import workflow

from schemas.progress import RunProgress, Waiting
from workflows.search_attributes import AGENT_WAITING


class WaitBoard:
    def __init__(self, progress: RunProgress) -> None:
        self._progress = progress
        self._before: str | None = None

    def show(self, step_id: str, waiting: Waiting | None) -> None:
        """`step_id` starts waiting (`waiting`) or stops (None)."""
        board = [w for w in self._progress.waiting if w.step_id != step_id]
        if waiting is not None:
            board.append(waiting)
        was_waiting = bool(self._progress.waiting)
        self._progress.waiting = board
        if board and not was_waiting:
            self._before = self._progress.stage
            workflow.upsert_search_attributes([AGENT_WAITING.value_set(True)])
        elif was_waiting and not board:
            workflow.upsert_search_attributes([AGENT_WAITING.value_unset()])
        text = self._describe(board) if board else (self._before or self._progress.stage)
        workflow.set_current_details(text)
        self._progress.stage = text

    @staticmethod
    def _describe(board: list[Waiting]) -> str:
        parts = []
        for w in board:
            stamp = w.until.isoformat(timespec="seconds")
            part = f"{w.step_id}: waiting {w.what}, next at {stamp}"
            if w.deadline is not None:
                until = w.deadline.isoformat(timespec="seconds")
                part += f" (runs {w.runs}, watching until {until})"
            parts.append(part)
        return "waiting — " + "; ".join(parts)

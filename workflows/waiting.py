"""What a run waits on, shown to ops: `progress.waiting`, current details, `AgentWaiting`.

Timers (`wait` steps), watches between two runs and calls waiting for a downstream slot
report here. While anything waits the
run carries `AgentWaiting = true` (the Web UI filters on it; `agentkeel watches` lists
them) and its current details say what and until when; the attribute is unset when the
last wait ends, so a finished run is never listed as waiting.
"""

from __future__ import annotations

from temporalio import workflow

from agentkeel.schemas.progress import RunProgress, Waiting
from agentkeel.schemas.search_attributes import AGENT_WAITING
from agentkeel.schemas.tools.downstreams import SlotWait


class WaitBoard:
    def __init__(self, progress: RunProgress) -> None:
        self._progress = progress
        self._before: str | None = None
        self._by_key: dict[str, Waiting] = {}

    def slot(self, note: SlotWait) -> None:
        """A tool call waits for a slot of its downstream, or got one after `waited_ms`
        (the `slot_wait` signal): shown as waiting, and its queue time kept on the step."""
        step_id = note.call_id.split("[", 1)[0]
        key = f"slot:{note.call_id}"
        if note.waiting:
            if key not in self._by_key:
                what = f"a {note.downstream} slot ({note.call_id})"
                self.show(
                    key,
                    Waiting(step_id=step_id, tool=note.downstream, what=what, since=workflow.now()),
                )
            return
        self.end_slot_wait(note.call_id)
        for step in self._progress.steps:
            if step.id == step_id and step.attempt == self._progress.replans:
                step.queued_ms += note.waited_ms

    def end_slot_wait(self, call_id: str) -> None:
        """The call is done (however it ended): it waits for no slot any more, even if the
        signal saying so never came (its activity timed out, its worker died)."""
        self.show(f"slot:{call_id}", None)

    def show(self, key: str, waiting: Waiting | None) -> None:
        """`key` (a step id, or a call's) starts waiting (`waiting`) or stops (None)."""
        if waiting is None:
            if key not in self._by_key:
                return  # nothing shown for it (a call that never waited long)
            self._by_key.pop(key, None)
        else:
            self._by_key[key] = waiting
        board = list(self._by_key.values())
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
            if w.until is None:
                parts.append(f"{w.step_id}: waiting for {w.what}")
                continue
            stamp = w.until.isoformat(timespec="seconds")
            part = f"{w.step_id}: waiting {w.what}, next at {stamp}"
            if w.deadline is not None:
                until = w.deadline.isoformat(timespec="seconds")
                part += f" (runs {w.runs}, watching until {until})"
            parts.append(part)
        return "waiting — " + "; ".join(parts)

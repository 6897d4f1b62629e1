"""The question shown in the Web UI's run list (`AgentQuestion`) fits Temporal's limit for
one search attribute value whatever characters the question holds: an over-long value
fails the workflow, so a question of emoji once failed its run."""

from __future__ import annotations

import json

import pytest

from agentkeel.schemas.search_attributes import QUESTION_BYTES, QUESTION_SHOWN, shown_question


@pytest.mark.parametrize(
    "question",
    ["Where is order 1001?", "a" * 5000, "😀" * 500, "\x00\ud800" * 400, "é" * 300, ""],
)
def test_the_shown_question_is_its_beginning_and_fits_the_limit(question: str) -> None:
    shown = shown_question(question)
    assert question.startswith(shown)
    assert len(shown) <= QUESTION_SHOWN
    assert len(json.dumps(shown).encode()) <= QUESTION_BYTES < 2048
    if len(json.dumps(question[:QUESTION_SHOWN])) <= QUESTION_BYTES:
        assert shown == question[:QUESTION_SHOWN]  # nothing cut that fits

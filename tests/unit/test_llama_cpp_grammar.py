"""llama.cpp's choice grammar: labels that GBNF literals cannot hold are escaped."""

from __future__ import annotations

from agentkeel.inference.engines.gbnf import choice_grammar


def test_choice_grammar_escapes_what_gbnf_literals_cannot_hold() -> None:
    grammar = choice_grammar(['say "yes"', "back\\slash", "two\nlines", "nul\x00"])
    assert grammar == 'root ::= "say \\"yes\\"" | "back\\\\slash" | "two\\nlines" | "nul\\x00"'

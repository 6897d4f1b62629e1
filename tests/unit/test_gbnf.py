"""JSON Schema to GBNF: the shapes the grammar takes (its decoding is checked on a real
llama.cpp server in `tests/fleet/test_llama_cpp.py`)."""

from __future__ import annotations

import pytest

from agentkeel.inference.engines.gbnf import UnsupportedSchema, choice_grammar, json_schema_to_gbnf
from agentkeel.inference.llm.plan_schema import plan_json_schema


def rules(grammar: str) -> dict[str, str]:
    return dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())


def test_required_properties_come_first_and_optional_ones_may_be_left_out() -> None:
    grammar = rules(
        json_schema_to_gbnf(
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
                "required": ["b"],
            }
        )
    )
    root = grammar[grammar["root"]]
    assert root.startswith('"{" ws "\\"b\\"" ws ":" ws boolean')
    assert '(ws "," ws ' in root, "the optional property follows, optionally"


def test_arrays_keep_their_bounds_and_patterns_become_character_rules() -> None:
    grammar = json_schema_to_gbnf(
        {
            "type": "array",
            "items": {"type": "string", "pattern": "^s[0-9]{1,2}$"},
            "minItems": 1,
            "maxItems": 3,
        }
    )
    assert '("s" [0-9]{1,2})' in grammar
    assert "{0,2}" in grammar, "one item, then at most two more"


def test_the_plan_schema_converts_and_unsupported_constructs_are_named() -> None:
    grammar = json_schema_to_gbnf(plan_json_schema())
    assert grammar.startswith("root ::= ") and "get_order" in grammar
    with pytest.raises(UnsupportedSchema, match="only local"):
        json_schema_to_gbnf({"$ref": "https://example.com/schema.json"})
    with pytest.raises(UnsupportedSchema, match=r"'\^' at 1"):
        json_schema_to_gbnf({"type": "string", "pattern": "^a^b$"})


@pytest.mark.parametrize(
    ("schema", "refusal"),
    [
        ({"type": "string", "pattern": '^["a]+$'}, "in a class"),
        ({"type": "string", "pattern": "^[^a]+$"}, "negated"),
        ({"type": "string", "pattern": "^a\\nb$"}, "escape"),
        ({"type": "string", "pattern": '^a"b$'}, "'\"'"),
        ({"type": "string", "pattern": "^a+?$"}, "lazy"),
        ({"type": "object", "properties": {}, "required": ["x"]}, "without a schema"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "additionalProperties"),
        ({"enum": []}, "empty enum"),
        ({"allOf": [{"type": "integer"}]}, "allOf"),
    ],
)
def test_what_cannot_be_expressed_faithfully_is_refused(
    schema: dict[str, object], refusal: str
) -> None:
    with pytest.raises(UnsupportedSchema, match=refusal):
        json_schema_to_gbnf(schema)


def test_edge_shapes() -> None:
    assert '"[" ws "]"' in json_schema_to_gbnf({"type": "array", "maxItems": 0})
    unanchored = json_schema_to_gbnf({"type": "string", "pattern": "abc"})
    assert 'char* ("a" "b" "c") char*' in unanchored
    dollar = json_schema_to_gbnf({"type": "string", "pattern": "^price\\$"})
    assert '"p" "r" "i" "c" "e" "$") char*' in dollar, "an escaped $ is no anchor"
    long = rules(json_schema_to_gbnf({"type": "string", "maxLength": 5000}))
    assert long[long["root"]] == '"\\"" char* "\\""', "past llama.cpp's repeat limit: open"


def test_choice_grammar_quotes_every_label() -> None:
    assert choice_grammar(["a", 'b"c']) == 'root ::= "a" | "b\\"c"'


def test_a_schema_gbnf_cannot_express_goes_unconstrained_not_failing() -> None:
    from agentkeel.inference.engines.protocol import JsonSchemaConstraint
    from agentkeel.inference.engines.structured import structured_body

    odd = JsonSchemaConstraint(json_schema={"type": "string", "pattern": "^[^a]+$"})
    assert structured_body(odd, "gbnf") == {}
    plain = JsonSchemaConstraint(json_schema={"type": "integer"})
    assert structured_body(plain, "gbnf")["grammar"].startswith("root ::= integer")


def test_vllm_gets_the_schema_with_at_most_one_space_between_tokens() -> None:
    from agentkeel.inference.engines.protocol import ChoiceConstraint, JsonSchemaConstraint
    from agentkeel.inference.engines.structured import GUIDANCE_WHITESPACE, structured_body

    schema = plan_json_schema()
    sent = structured_body(JsonSchemaConstraint(json_schema=schema), "vllm")
    assert sent["structured_outputs"]["json"] == {
        **schema,
        "x-guidance": {"whitespace_pattern": GUIDANCE_WHITESPACE},
    }
    assert "x-guidance" not in schema, "the caller's schema is not changed"
    # llguidance compiles it (what vLLM's guidance backend does with it).
    llguidance = pytest.importorskip("llguidance")
    llguidance.LLMatcher.grammar_from_json_schema(sent["structured_outputs"]["json"])
    choice = structured_body(ChoiceConstraint(choices=["a", "b"]), "vllm")
    assert choice == {"structured_outputs": {"choice": ["a", "b"]}}

"""The questions of `bench.peers`, the plan each one needs, and what its tools return.

Every run asks a question of its own, so no cache of any system answers it and every tool
call of a run has arguments no earlier call had (a result cache serves nothing across
runs, or between two steps of one run). Two kinds of question per shape:

- **named** (the warm rows): the question names the entities its first reads need, as a
  support question does ("order 70012"): the first reads are `get_order` of those orders.
- **cold**: the question names nothing; the first reads are searches whose topic only a
  model can choose.

    bench diamond #12 of aa: order 70096    -> get_order(70096), then its item and parcel
    bench 4-wide #3 of aa: orders 70024, 70025, 70026, 70027
    bench chain #7 of aa                    -> search_kb("topic of question 7 of aa"), ...

A batch (two or more letters: never read as an order id) tells invocations apart, so
nothing cached by an earlier one answers a later one.

A named question may be **wrong once** (the replan rows): the model's first reading of it
looks up an order that does not exist (`wrong_order_id`: the id it names, misread), the
tool says so (`NoSuchOrder`), and the model, seeing that failure in its conversation, writes
the calls again with the id the question names. Each system meets the failure through its
own tool-error path, so the row measures one replan in each system's own form.

    bench chain #9 of aa, wrong once: order 70072  -> get_order(10070072) fails, then as above

The plan of a question is its shape's dependency structure (`bench.dag_shapes`' names:
chain of 4, diamond, 4-wide, 8-wide) over these tools; every `$ref` reads a field the
earlier step's result really has. Each system's ideal model (`bench.ideal_model`) and
tool activities use this module alone, so they make the same calls and get the same
results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentkeel.workflows.dag.resolve import resolve

SHAPE_NAMES = ("chain", "diamond", "4-wide", "8-wide")
FIRST_ORDER = 70_000
"""Order ids of named questions start here; each run has ids of its own."""
IDS_PER_RUN = 8
"""The widest shape's reads: the ids of run n are FIRST_ORDER + 8n ... + 8n + 7."""
_QUESTION = re.compile(
    r"^bench (?P<shape>\S+) #(?P<n>\d+) of (?P<batch>[a-z]+)"
    r"(?P<wrong>, wrong once)?(?P<named>:.*)?$"
)
WRONG_ONCE = ", wrong once"
MISREAD = 10_000_000
"""A misread order id is the id plus this: past every id a batch names, so it exists nowhere."""
RUNS_PER_BATCH = 1_000
BATCHES = 26 * 26
"""Two letters: ids stay at most seven digits."""

TOOL_ARGS = {
    "search_kb": ("query",),
    "get_order": ("order_id",),
    "check_inventory": ("sku",),
    "track_shipment": ("tracking_number",),
}
"""The tools of every system in the benchmark and the arguments a model chooses."""


@dataclass(frozen=True)
class Case:
    """One run's question: its shape, its number in the batch, named or cold."""

    shape: str
    n: int
    named: bool
    batch: str = "aa"
    """Lower-case letters: the invocation's own (`batch_name`)."""
    wrong_once: bool = False  # its first reading looks up a misread order id (named only)

    def __post_init__(self) -> None:
        if self.wrong_once and not self.named:
            raise ValueError("only a named question can be misread")

    @property
    def question(self) -> str:
        head = f"bench {self.shape} #{self.n} of {self.batch}"
        if self.wrong_once:
            head += WRONG_ONCE
        if not self.named:
            return head
        ids = self.order_ids
        if len(ids) == 1:
            return f"{head}: order {ids[0]}"
        return f"{head}: orders {', '.join(map(str, ids))}"

    @property
    def topic(self) -> str:
        return f"question {self.n} of {self.batch}"

    @property
    def order_ids(self) -> list[int]:
        runs = batch_number(self.batch) * RUNS_PER_BATCH + self.n % RUNS_PER_BATCH
        base = FIRST_ORDER + IDS_PER_RUN * runs
        return [base + i for i in range(self.width if self.shape.endswith("-wide") else 1)]

    @property
    def width(self) -> int:
        return int(self.shape.split("-")[0]) if self.shape.endswith("-wide") else 1


def case_of(question: str) -> Case:
    """The case a question asks; a `ValueError` for a question of no case."""
    # A framework may add text around the user's question: find the line that is it.
    for line in question.splitlines():
        found = _QUESTION.match(line.strip())
        if found and found["shape"] in SHAPE_NAMES:
            named, wrong = found["named"] is not None, found["wrong"] is not None
            return Case(found["shape"], int(found["n"]), named, found["batch"], wrong and named)
    raise ValueError(f"not a bench question: {question[:80]!r}")


def case_in(text: str) -> Case:
    """The case of the first bench question anywhere in `text` (a whole conversation)."""
    found = re.search(
        r"bench (?:chain|diamond|4-wide|8-wide) #\d+ of [a-z]+(?:, wrong once)?(?::[^\"\n]*\d)?",
        text,
    )
    if found is None:
        raise ValueError(f"no bench question in {text[:80]!r}")
    return case_of(found.group(0))


def batch_name(number: int) -> str:
    """`number` (modulo `BATCHES`) in two letters (0 -> "aa"): a batch no entity pattern
    reads as an id."""
    high, low = divmod(number % BATCHES, 26)
    return chr(ord("a") + high) + chr(ord("a") + low)


def batch_number(name: str) -> int:
    number = 0
    for letter in name:
        number = number * 26 + ord(letter) - ord("a")
    return number


@dataclass(frozen=True)
class Step:
    id: str
    tool: str
    args: dict[str, Any]
    after: tuple[str, ...] = ()

    @property
    def deps(self) -> set[str]:
        refs = {v[1:].split(".")[0] for v in self.args.values() if str(v).startswith("$")}
        return refs | set(self.after)


def plan_of(case: Case, *, misread: bool = False) -> list[Step]:
    """The steps `case`'s question needs, in an order where each follows its inputs; with
    `misread`, as a wrong-once question is first read (its first order id misread)."""
    if not case.named:
        return _cold_plan(case)
    steps = _named_plan(case)
    if misread and case.wrong_once:
        first = steps[0]
        steps[0] = Step(first.id, first.tool, {"order_id": misread_id(case)}, first.after)
    return steps


def misread_id(case: Case) -> int:
    return case.order_ids[0] + MISREAD  # what a wrong-once question's first reading reads


class NoSuchOrder(LookupError):  # `get_order` of an id no order has: a misread id
    pass


def failure_of(case: Case) -> str:
    return f"order {misread_id(case)} not found"  # as every system's tool reports it


def corrected(case: Case, conversation: str) -> bool:
    """Whether the model reads the question right: always, unless it is wrong once and its
    misread lookup's failure is not in the conversation yet."""
    return not case.wrong_once or failure_of(case) in conversation


def reading(conversation: str) -> list[Step]:
    """The plan a model writes for the bench question of `conversation`, given what it has
    seen there (a misread lookup's failure corrects a wrong-once question)."""
    case = case_in(conversation)
    return plan_of(case, misread=not corrected(case, conversation))


def _named_plan(case: Case) -> list[Step]:
    first = case.order_ids[0]
    if case.shape == "chain":
        return [
            Step("s1", "get_order", {"order_id": first}),
            Step("s2", "track_shipment", {"tracking_number": "$s1.tracking_number"}),
            Step("s3", "search_kb", {"query": "$s2.location"}),
            Step("s4", "search_kb", {"query": "$s3.hits.0.title"}),
        ]
    if case.shape == "diamond":
        return [
            Step("s1", "get_order", {"order_id": first}),
            Step("s2", "check_inventory", {"sku": "$s1.items.0.sku"}),
            Step("s3", "track_shipment", {"tracking_number": "$s1.tracking_number"}),
            Step("s4", "search_kb", {"query": "$s2.product_name"}, after=("s3",)),
        ]
    return [Step(f"s{i + 1}", "get_order", {"order_id": o}) for i, o in enumerate(case.order_ids)]


def _cold_plan(case: Case) -> list[Step]:
    topic = f"topic of {case.topic}"
    if case.shape == "chain":
        steps = [Step("s1", "search_kb", {"query": topic})]
        for i in range(2, 5):
            steps.append(Step(f"s{i}", "search_kb", {"query": f"$s{i - 1}.hits.0.title"}))
        return steps
    if case.shape == "diamond":
        return [
            Step("s1", "search_kb", {"query": topic}),
            Step("s2", "search_kb", {"query": "$s1.hits.0.title"}),
            Step("s3", "search_kb", {"query": "$s1.hits.0.snippet"}),
            Step("s4", "search_kb", {"query": "$s2.hits.0.snippet"}, after=("s3",)),
        ]
    return [
        Step(f"s{i}", "search_kb", {"query": f"topic {i} of {case.topic}"})
        for i in range(1, case.width + 1)
    ]


def result_of(tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """What `tool` returns for `args`: derived from the arguments, so chained steps get
    arguments of their own."""
    if tool == "search_kb":
        query = str(args["query"])
        hit = {"title": f"{query} (more)", "snippet": f"notes on {query}"}
        return {"query": query, "hits": [hit]}
    if tool == "get_order":
        order_id = int(args["order_id"])
        if order_id >= MISREAD:
            raise NoSuchOrder(f"order {order_id} not found")
        item = {"sku": f"SKU-{order_id}", "product_name": f"Widget {order_id}", "quantity": 1}
        tracking = f"TRK{order_id:010d}"
        return {
            "order_id": order_id,
            "status": "shipped",
            "items": [item],
            "tracking_number": tracking,
        }
    if tool == "check_inventory":
        sku = str(args["sku"])
        return {"sku": sku, "product_name": f"Widget {sku}", "available": 3}
    if tool == "track_shipment":
        number = str(args["tracking_number"])
        return {"tracking_number": number, "status": "in transit", "location": f"hub of {number}"}
    raise ValueError(f"no bench tool {tool!r}")


@dataclass(frozen=True)
class Call:
    """One tool call of a round: the step id doubles as the model's tool-call id."""

    step_id: str
    tool: str
    args: dict[str, Any]


def next_round(conversation: str, outputs: Mapping[str, Any]) -> list[Call]:
    """The calls an ideal tool-calling model makes after seeing `outputs` (step id -> tool
    result; a failed call has none) in `conversation`: every step whose inputs have returned;
    empty once every step has returned."""
    steps = reading(conversation)
    ready = [s for s in steps if s.id not in outputs and all(d in outputs for d in s.deps)]
    return [Call(s.id, s.tool, dict(resolve(dict(s.args), outputs))) for s in ready]


def expected_calls(question: str) -> list[str]:
    """The tool calls a correct run of `question` makes, canonical and sorted: for a
    wrong-once question, its misread lookup too (each system makes that call once)."""
    conversation = question
    outputs: dict[str, Any] = {}
    made: list[tuple[str, dict[str, Any]]] = []
    while calls := next_round(conversation, outputs):
        for c in calls:
            made.append((c.tool, c.args))
            try:
                outputs[c.step_id] = result_of(c.tool, c.args)
            except NoSuchOrder as failure:
                conversation += f"\n{failure}"
    return canonical(made)


def canonical(calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """(tool, arguments) pairs as sorted JSON text: equal for the same calls in any order."""
    return sorted(json.dumps([tool, args], sort_keys=True) for tool, args in calls)

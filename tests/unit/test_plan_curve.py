"""`bench.plan_curve`: each threshold sends the unsure requests to the heavy tier."""

from __future__ import annotations

from bench.plan_curve import Both, curve
from bench.plan_scoring import Row, Scored


def _row(n: int) -> Row:
    return Row(
        id=f"r{n}",
        question=f"q{n}",
        kind="single",
        blind=False,
        tools=frozenset({"get_order"}),
        args={},
        effects=frozenset(),
    )


def _scored(row: Row, exact: bool) -> Scored:
    tools = frozenset({"get_order"}) if exact else frozenset({"search_kb"})
    return Scored(row, True, tools, exact, False, 0.0, None)


def test_the_heavy_share_grows_with_the_threshold_and_quality_follows_the_tier() -> None:
    rows = [_row(n) for n in range(4)]
    requests = [
        Both(0.95, _scored(rows[0], True), _scored(rows[0], True)),
        Both(0.65, _scored(rows[1], False), _scored(rows[1], True)),
        Both(0.40, _scored(rows[2], False), _scored(rows[2], True)),
        Both(0.90, None, _scored(rows[3], True)),  # no usable draft: always heavy
    ]
    points = curve(requests)
    assert points["0.00"] == {"heavy_share": 0.25, "exact": 0.5, "tool_recall": 0.5}
    assert points["0.50"]["heavy_share"] == 0.5 and points["0.50"]["exact"] == 0.75
    assert points["0.70"]["heavy_share"] == 0.75 and points["0.70"]["exact"] == 1.0
    assert points["1.01"] == {"heavy_share": 1.0, "exact": 1.0, "tool_recall": 1.0}

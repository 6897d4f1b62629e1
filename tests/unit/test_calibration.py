"""Calibrating the router threshold from what the heavy model decided (`client.calibration`)."""

from __future__ import annotations

import pytest

from agentkeel.client.calibration import RecordedRoute, calibrate, format_calibration, point

# Ten routes the heavy model read: the router is right when sure, wrong when not.
ROUTES = [
    *(RecordedRoute(c, agreed=True) for c in (0.9, 0.9, 1.0, 0.8, 0.8, 0.7)),
    RecordedRoute(0.6, agreed=False),
    RecordedRoute(0.5, agreed=False),
    RecordedRoute(0.3, agreed=True),
    RecordedRoute(None, agreed=False),  # the router could not tell: heavy at any threshold
]


def test_the_curve_trades_heavy_share_for_errors() -> None:
    assert point(ROUTES, 0.0) == point(ROUTES, 0.0).__class__(0.0, 0.1, 0.2)
    assert point(ROUTES, 0.7) == point(ROUTES, 0.7).__class__(0.7, 0.4, 0.0)
    assert point(ROUTES, 1.0).heavy_share == 0.9


def test_an_error_target_keeps_the_most_routes_light() -> None:
    result = calibrate(ROUTES, error_rate=0.0)
    assert result.threshold == 0.7  # 0.6 still keeps a wrong route light
    assert result.at_threshold is not None and result.at_threshold.heavy_share == 0.4
    loose = calibrate(ROUTES, error_rate=0.1)
    assert loose.threshold == 0.6 and loose.at_threshold is not None
    assert loose.at_threshold.error_rate == 0.1


def test_a_heavy_share_target_makes_the_fewest_errors_within_it() -> None:
    result = calibrate(ROUTES, heavy_share=0.3)
    assert result.threshold == 0.6  # heavy 30%: the route at 0.5 goes heavy, 0.6 stays
    assert result.at_threshold is not None and result.at_threshold.error_rate == 0.1
    # Below it, every threshold keeps both wrong routes light: the one with fewest heavy.
    tight = calibrate(ROUTES, heavy_share=0.25)
    assert tight.at_threshold is not None
    assert (tight.at_threshold.heavy_share, tight.at_threshold.error_rate) == (0.1, 0.2)
    assert calibrate(ROUTES, heavy_share=0.05).threshold is None  # "could not tell" is 10%
    text = format_calibration(calibrate(ROUTES, heavy_share=0.5))
    assert "AGENTKEEL_ROUTER_THRESHOLD=0.7" in text and "threshold" in text


def test_one_target_only() -> None:
    with pytest.raises(ValueError, match="one target"):
        calibrate(ROUTES, heavy_share=0.2, error_rate=0.1)

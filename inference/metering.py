"""The meter the policies count on: the activity's (its worker's metrics endpoint, with the
activity's labels) inside an activity, else the process's Temporal runtime's."""

from __future__ import annotations

from temporalio import activity
from temporalio.common import MetricMeter
from temporalio.runtime import Runtime


def meter() -> MetricMeter:
    if activity.in_activity():
        return activity.metric_meter()
    return Runtime.default().metric_meter

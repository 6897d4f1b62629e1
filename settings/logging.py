"""structlog for every agentkeel process: configured once in main(), JSON unless on a TTY.

Records are rendered in the calling thread (so Temporal context, which lives in context
variables, is still visible) and written by a background thread through a queue, so a slow
terminal or pipe never stalls the event loop. Standard-library loggers (temporalio, aiohttp,
asyncio) go through the same processors and the same queue.
"""

from __future__ import annotations

import atexit
import logging
import logging.handlers
import queue
import sys
from typing import Any

import structlog
from opentelemetry import trace
from structlog.typing import EventDict, Processor, WrappedLogger
from temporalio import activity, workflow

from agentkeel.settings.model import LogFormat, LogLevel

__all__ = ["add_temporal_context", "add_trace_context", "configure_logging"]

_LEVELS: dict[LogLevel, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
_listener: logging.handlers.QueueListener | None = None


def add_temporal_context(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Add workflow id, run id, activity type and attempt when logging inside an activity.

    Inside workflow code it adds workflow id and run id (prefer `workflow.logger` there: it is
    silent during replay).
    """
    if activity.in_activity():
        info = activity.info()
        event_dict.setdefault("workflow_id", info.workflow_id)
        event_dict.setdefault("run_id", info.workflow_run_id)
        event_dict.setdefault("activity_type", info.activity_type)
        event_dict.setdefault("attempt", info.attempt)
    elif workflow.in_workflow():
        winfo = workflow.info()
        event_dict.setdefault("workflow_id", winfo.workflow_id)
        event_dict.setdefault("run_id", winfo.run_id)
    return event_dict


def add_trace_context(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Add the current span's trace and span ids, so a log line leads to its trace."""
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        event_dict.setdefault("trace_id", format(context.trace_id, "032x"))
        event_dict.setdefault("span_id", format(context.span_id, "016x"))
    return event_dict


def configure_logging(level: LogLevel = "info", fmt: LogFormat = "auto") -> None:
    """Route structlog and stdlib logging through one processor chain and a background writer.

    Args:
        level: `debug`, `info`, `warning`, `error` or `critical`.
        fmt: `json`, `console`, or `auto` (console when stderr is a TTY, JSON otherwise).

    Both come checked from the settings (`AGENTKEEL_LOG_LEVEL`, `AGENTKEEL_LOG_FORMAT`).
    Calling it again replaces the previous configuration (tests do; processes call it once).
    """
    global _listener
    numeric = _LEVELS[level]
    tty = sys.stderr.isatty()
    as_json = fmt == "json" or (fmt == "auto" and not tty)

    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        add_temporal_context,
        add_trace_context,
    ]
    renderer: Processor
    if as_json:
        renderer = structlog.processors.JSONRenderer()
        # Locals in tracebacks could carry secrets (DSNs, keys): frames only.
        no_locals = structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
        shared += [structlog.processors.ExceptionRenderer(no_locals)]
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=tty)
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )

    if _listener is not None:
        _listener.stop()
    records: queue.SimpleQueue[Any] = queue.SimpleQueue()
    to_queue = logging.handlers.QueueHandler(records)
    to_queue.setFormatter(formatter)  # QueueHandler.prepare() formats in the calling thread
    writer = logging.StreamHandler(sys.stderr)
    writer.setFormatter(logging.Formatter("%(message)s"))
    _listener = logging.handlers.QueueListener(records, writer)
    _listener.start()

    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(to_queue)
    root.setLevel(numeric)

    structlog.configure(
        processors=[
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        cache_logger_on_first_use=True,
    )


@atexit.register
def _flush() -> None:
    # Whatever is still queued is written before the process exits.
    if _listener is not None:
        _listener.stop()

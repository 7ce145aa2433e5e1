"""The broker's log output: plain text lines, or one JSON object per line (setting `log_format`).

JSON lines carry `level`, `logger`, `message` and `time` (ISO 8601, UTC), then every structured field
the line was logged with (`extra`): a refused request's client_id, peer, principal, api and reason
(broker/net/refusals.py), for instance. python-json-logger writes them; a traceback is in `exc_info`.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from pythonjsonlogger.json import JsonFormatter

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def formatter(log_format: str) -> logging.Formatter:
    """The formatter of a `log_format`; ValueError for a format that is neither text nor json."""
    if log_format == "text":
        return logging.Formatter(TEXT_FORMAT)
    if log_format == "json":
        return JsonFormatter(
            "{levelname}{name}{message}",
            style="{",
            timestamp="time",
            rename_fields={"levelname": "level", "name": "logger"},
        )
    raise ValueError(f"log_format {log_format!r}: use one of {', '.join(FORMATS)}")


class _Handler(logging.StreamHandler):
    """The handler configure() installs (and replaces on a second call; others are left alone)."""


def configure(level: str, log_format: str = "text", stream: TextIO | None = None) -> None:
    """Sends every logger's lines at `level` and above to stderr (or `stream`) in `log_format`."""
    handler = _Handler(stream or sys.stderr)
    handler.setFormatter(formatter(log_format))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())

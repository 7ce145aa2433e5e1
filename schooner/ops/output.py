"""How CLI commands print: a rich table for people, or JSON for scripts (`--output json`).

Errors are one line on stderr and a non-zero exit (click.ClickException), never a traceback:
schooner/ops/cli.py's group turns the client and storage failures that escape a command into one.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

F = TypeVar("F", bound=Callable[..., Any])

FORMATS = ("table", "json")


def with_output_option(fn: F) -> F:
    """Adds `--output table|json` (`-o`); the command receives `output: str`."""
    return click.option(
        "--output",
        "-o",
        "output",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        help="table for people, json for scripts.",
    )(fn)


def emit(
    rows: Iterable[Mapping[str, Any]],
    columns: Sequence[str],
    output: str,
    *,
    title: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> None:
    """Prints rows: a table of `columns` (headed by `headers` or the upper-cased names), or a JSON list of
    the whole rows."""
    listed = list(rows)
    if output == "json":
        click.echo(json.dumps(listed, default=str))
        return
    table = Table(title=title, box=None, header_style="bold", pad_edge=False)
    for column in columns:
        numeric = bool(listed) and isinstance(listed[0].get(column), int | float)
        table.add_column((headers or {}).get(column, column.upper()), justify="right" if numeric else "left")
    for row in listed:
        table.add_row(*("-" if row.get(c) is None else str(row.get(c)) for c in columns))
    Console(soft_wrap=True, width=_width()).print(table)


def emit_object(obj: Mapping[str, Any], output: str) -> None:
    """Prints one object: JSON, or `key: value` lines."""
    if output == "json":
        click.echo(json.dumps(obj, default=str))
        return
    width = max((len(k) for k in obj), default=0)
    for key, value in obj.items():
        click.echo(f"{key:<{width}}  {value}")


def _width() -> int | None:
    """The terminal's width; piped or captured output is not cut to 80 columns (ids stay whole)."""
    return None if sys.stdout.isatty() else 10_000

"""Templates, and how errors reach the page: as a message in the layout, never a traceback."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from ..kafka import KafkaFailure
from .context import console_of
from .registry_data import RegistryFailure

log = logging.getLogger(__name__)
HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))


def _bytes(n: int | None) -> str:
    if n is None or n < 0:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _time_ms(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


templates.env.filters["bytes"] = _bytes
templates.env.filters["time_ms"] = _time_ms
templates.env.filters["tojson_compact"] = lambda v: json.dumps(v, separators=(",", ":"))


def page(request: Request, template: str, status_code: int = 200, **context: Any) -> Response:
    console = console_of(request)
    context.setdefault("notice", request.query_params.get("notice"))
    return templates.TemplateResponse(
        request,
        template,
        {
            "read_only": console.settings.read_only,
            "needs_login": console.settings.needs_login,
            "user": _user(request),
            "has_redis": console.redis is not None,
            **context,
        },
        status_code=status_code,
    )


def _user(request: Request) -> str | None:
    from .context import SESSION_COOKIE

    side = console_of(request).side_of(request.cookies.get(SESSION_COOKIE))
    return side.client.sasl_username if side is not None else None


def done(url: str, notice: str) -> RedirectResponse:
    """After a change: back to a page (GET), which shows what was done."""
    from urllib.parse import urlencode

    sep = "&" if "?" in url else "?"
    return RedirectResponse(f"{url}{sep}{urlencode({'notice': notice})}", status_code=303)


_STATUS = {"AUTHORIZATION_FAILED": 403, "_TIMED_OUT": 504, "_TRANSPORT": 502, "_ALL_BROKERS_DOWN": 502,
           "UNKNOWN_TOPIC": 404, "GROUP_ID_NOT_FOUND": 404}  # fmt: skip


async def broker_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, KafkaFailure)
    code = next((s for key, s in _STATUS.items() if key in exc.code), 400)
    return page(request, "error.html", code, title="Refused", message=shown(exc))


def shown(exc: KafkaFailure) -> str:
    """The failure as a page says it: always naming Kafka's error, as the CLI's sentence may not."""
    text = str(exc)
    return text if not exc.code or text.startswith(exc.code) else f"{exc.code}: {text}"


def registry_status(exc: RegistryFailure) -> int:
    """A page's status for a registry failure: the registry's own refusal (404, 401, 403, ...) as it is,
    502 when it cannot be reached or fails itself."""
    return exc.status if 400 <= exc.status < 500 else 502


async def registry_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RegistryFailure)
    return page(request, "error.html", registry_status(exc), title="Schema registry", message=exc.message)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return page(request, "error.html", exc.status_code, title=f"{exc.status_code}", message=exc.detail)


async def any_error(request: Request, exc: Exception) -> Response:
    """Whatever else went wrong: a message on the page (the traceback goes to the console's log)."""
    log.exception("console error on %s", request.url.path)
    return page(request, "error.html", 500, title="Error", message=f"{type(exc).__name__}: {exc}")


def number(value: object, what: str, minimum: int | None = None) -> int:
    """A whole number from a form or query, or a message saying what was wrong."""
    try:
        n = int(str(value).strip())
    except ValueError:
        raise KafkaFailure(f"{what} must be a whole number, not {value!r}") from None
    if minimum is not None and n < minimum:
        raise KafkaFailure(f"{what} must be at least {minimum}")
    return n


def sampler_of(request: Request) -> Any:
    return request.app.state.sampler

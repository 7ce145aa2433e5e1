"""The console's Starlette application: routes of each area, the login gate, read-only, error pages,
and the sampler that runs beside the pages."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from ..kafka import KafkaFailure
from . import acls, groups, messages, mq, overview, schemas, sessions, topics
from .context import Console, ConsoleSettings
from .redis_data import RedisSide
from .registry_data import RegistryFailure
from .render import HERE, any_error, broker_error, http_error, page, registry_error
from .sampler import Sampler


async def gate(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Login first (when logins are needed); in read-only mode no POST but the login's; and no POST
    from another site's page (its Origin names another host)."""
    path = request.url.path
    open_path = path.startswith(sessions.OPEN_PATHS)
    if not open_path and not sessions.logged_in(request):
        return RedirectResponse("/login", status_code=303)
    if request.method == "POST":
        origin = request.headers.get("origin")
        if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host"):
            return page(request, "error.html", 403, title="Refused", message="a form from another site")
        read_only = request.app.state.console.settings.read_only
        if read_only and path not in ("/login", "/logout"):
            return page(request, "error.html", 403, title="Read-only",
                        message="This console is read-only: it changes nothing.")  # fmt: skip
    return await call_next(request)


def create_app(settings: ConsoleSettings) -> Starlette:
    redis = RedisSide(settings.redis_url, settings.keyspace) if settings.redis_url else None
    console = Console(settings, redis)
    sampler = Sampler(settings.history)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(sampler.run(console, settings.sample_interval_s))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            console.close()

    routes = [
        *sessions.routes, *overview.routes, *topics.routes, *messages.routes, *schemas.routes, *groups.routes,
        *mq.routes, *acls.routes,
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]  # fmt: skip
    app = Starlette(
        routes=routes,
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=gate)],
        exception_handlers={
            KafkaFailure: broker_error,
            RegistryFailure: registry_error,
            HTTPException: http_error,
            Exception: any_error,
        },  # fmt: skip
        lifespan=lifespan,
    )
    app.state.console = console
    app.state.sampler = sampler
    return app

"""Logins: with SASL client settings and no user name on the command line, each user logs in with their
own SASL credentials. The console checks them by connecting to the broker as that user, keeps the
user's clients in a server-side map under a random token, and gives the browser only the token (an
HttpOnly, SameSite=Strict cookie): the password never leaves the server.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from .context import SESSION_COOKIE, console_of
from .kafka_data import KafkaSide
from .render import page

OPEN_PATHS = ("/login", "/static/")  # reachable without a login


def logged_in(request: Request) -> bool:
    console = console_of(request)
    return (
        not console.settings.needs_login or console.side_of(request.cookies.get(SESSION_COOKIE)) is not None
    )


async def login_form(request: Request) -> Response:
    if not console_of(request).settings.needs_login:
        return RedirectResponse("/", status_code=303)
    return page(request, "login.html", title="Log in", mechanism=_mechanism(request))


async def login(request: Request) -> Response:
    console = console_of(request)
    form = await request.form()
    username, password = str(form.get("username", "")).strip(), str(form.get("password", ""))
    if not username or not password:
        return page(request, "login.html", 400, title="Log in", error="Give a user name and a password.",
                    mechanism=_mechanism(request))  # fmt: skip
    side = KafkaSide(console.settings.client.with_login(username, password))
    refused = await run_in_threadpool(side.check_login)
    if refused is not None:
        side.close()
        return page(request, "login.html", 401, title="Log in", error=f"Login refused: {refused}",
                    mechanism=_mechanism(request))  # fmt: skip
    token = console.login(side)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="strict")
    return response


async def logout(request: Request) -> Response:
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        console_of(request).logout(token)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


def _mechanism(request: Request) -> str:
    return console_of(request).settings.client.sasl_mechanism or "PLAIN"


routes = [
    Route("/login", login_form, methods=["GET"]),
    Route("/login", login, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
]

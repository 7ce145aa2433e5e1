"""The schema registry: its subjects (each with its latest version, schema id and type), a subject's versions
with their schemas, compatibility level and mode, and a schema by id. Read only (producers and the
registry's REST API register schemas); asked over HTTP as the page's user. When the registry cannot be
reached, or refuses, the page says so."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .context import registry
from .registry_data import RegistryFailure, RegistrySide, Setting, Subject, SubjectRow
from .render import page, registry_status

HINT = "The console asks the registry at {url}; give it another with --schema-registry URL."


def _listing(side: RegistrySide) -> tuple[list[SubjectRow], Setting, Setting]:
    rows = side.subjects()
    compatibility, mode = side.global_settings()
    return rows, compatibility, mode


async def schema_list(request: Request) -> Response:
    side = registry(request)
    try:
        rows, compatibility, mode = await run_in_threadpool(_listing, side)
    except RegistryFailure as exc:
        return page(request, "schemas.html", registry_status(exc), title="Schemas", subjects=[],
                    failure=exc.message, hint=HINT.format(url=side.url), url=side.url)  # fmt: skip
    return page(request, "schemas.html", title="Schemas", subjects=rows, compatibility=compatibility,
                mode=mode, url=side.url)  # fmt: skip


async def subject_page(request: Request) -> Response:
    name = request.path_params["subject"]
    found: Subject = await run_in_threadpool(registry(request).subject, name)
    return page(request, "subject.html", title=f"Subject {name}", subject=found)


async def schema_page(request: Request) -> Response:
    schema_id = request.path_params["schema_id"]
    found = await run_in_threadpool(registry(request).schema, schema_id)
    return page(request, "schema.html", title=f"Schema {schema_id}", schema=found)


routes = [
    Route("/schemas", schema_list, methods=["GET"]),
    Route("/schemas/ids/{schema_id:int}", schema_page, methods=["GET"]),
    Route("/schemas/subjects/{subject:path}", subject_page, methods=["GET"]),
]

"""Confluent's Schema Registry REST API over SchemaRegistry, as a Starlette app.

Bodies and answers are JSON, with the content types the clients send and accept
(application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json). Every
error is Confluent's body {"error_code", "message"}. Who may do what is the Access the app is given (the
broker's: HTTP Basic as its SASL users, its ACLs, a tenant's own registry); without one, anyone may.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..schemas import AVRO, SCHEMA_TYPES
from ..storage.redis.calls import StorageError
from ..storage.schemas.registry import Reference, StoredSchema
from . import errors
from .errors import RegistryError
from .service import GLOBAL, Config, SchemaRegistry, SubjectVersion, check_subject, parse_version

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_BODY = 8 * 1024 * 1024  # a schema bigger than this is refused before it is parsed

_STORAGE_ERRORS = (StorageError, OSError)
# What a request does to what, for Access.allowed: (operation, subject or None for the registry itself).
READ, WRITE, DELETE, CONFIGURE, DESCRIBE_CONFIG = "read", "write", "delete", "configure", "describe_config"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent the request, as Access saw them, and the registry they may use."""

    registry: SchemaRegistry
    principal: str = "User:ANONYMOUS"
    context: Any = None  # what Access keeps of the caller for its decisions


class Access(Protocol):
    async def caller(self, request: Request) -> Caller:
        """The caller of the request; RegistryError 401 when it does not authenticate."""
        ...

    async def allowed(
        self, caller: Caller, request: Request, operation: str, subject: str | None
    ) -> bool: ...


class Open:
    """No authentication and no authorization: one registry for every request."""

    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry

    async def caller(self, request: Request) -> Caller:
        return Caller(self.registry)

    async def allowed(self, caller: Caller, request: Request, operation: str, subject: str | None) -> bool:
        return True


# What the registry answers in, by preference, and what bodies it reads (Confluent's, as JAX-RS negotiates).
_ANSWER_TYPES = (CONTENT_TYPE, "application/vnd.schemaregistry+json", "application/json")
_BODY_TYPES = (*_ANSWER_TYPES, "application/octet-stream")


def _answer_type(accept: str | None) -> str | None:
    """The content type of the answer for the Accept header: the most wanted of ours (ties: ours first);
    None when the client accepts none of them (406)."""
    if not accept or not accept.strip():
        return CONTENT_TYPE
    best, best_q = None, 0.0
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        media = media.lower()
        offered = _ANSWER_TYPES if media in ("*/*", "application/*") else (media,) * (media in _ANSWER_TYPES)
        if offered and q > best_q:
            best, best_q = offered[0], q
    return best


def _readable_body(content_type: str | None) -> bool:
    return content_type is None or content_type.split(";")[0].strip().lower() in _BODY_TYPES


def _flag(request: Request, name: str) -> bool:
    # confluent-kafka's Python client sends Python's spelling ("True"/"False").
    return request.query_params.get(name, "false").lower() == "true"


def _answer(body: Any, status: int = 200) -> Response:
    return JSONResponse(body, status_code=status, media_type=CONTENT_TYPE)


def _error(e: RegistryError) -> Response:
    response = _answer({"error_code": e.error_code, "message": e.message}, e.status)
    if e.status == 401:  # RFC 9110: a 401 names its scheme, as Confluent's (Jetty's Basic) does
        response.headers["WWW-Authenticate"] = 'Basic realm="schema-registry"'
    return response


_SLASH = "\ue000"  # stands for an encoded "/" (%2F) of a subject while the path is routed


class _Paths:
    """Two path rules of Confluent's registry (JAX-RS) that Starlette's routing lacks: one trailing slash is
    dropped (/config/ is /config; python-schema-registry-client asks for it), and an encoded slash (%2F) is
    part of a subject, not a path separator. Starlette routes the decoded path, so %2F is routed as a
    private-use character, which `_subject` turns back into "/"."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope.get("path", "")
            raw: bytes = scope.get("raw_path") or path.encode()
            if b"%2f" in raw.lower():
                path = unquote(re.sub("%2[fF]", _SLASH, raw.decode("latin-1")))
            if len(path) > 1 and path.endswith("/"):
                path, raw = path[:-1], raw.removesuffix(b"/")
            scope = {**scope, "path": path, "raw_path": raw}
        await self.app(scope, receive, send)


def _subject(request: Request) -> str:
    """The subject the path names ("" for the global config and mode)."""
    return str(request.path_params.get("subject", GLOBAL)).replace(_SLASH, "/")


async def _body(request: Request) -> dict[str, Any]:
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise errors.RegistryError(413, 413, f"Request body is larger than {MAX_BODY} bytes")
    try:
        doc = json.loads(bytes(raw) or b"{}")
    except (ValueError, UnicodeDecodeError) as e:
        raise errors.bad_request(f"The request body is not JSON: {e}") from None
    except RecursionError:
        raise errors.bad_request("The request body nests too deeply") from None
    if not isinstance(doc, dict):
        raise errors.unprocessable("The request body must be a JSON object")
    return doc


@dataclass(frozen=True, slots=True)
class SchemaBody:
    schema_type: str
    schema: str
    references: list[Reference]
    schema_id: int | None
    version: int | None


def _schema_body(doc: dict[str, Any]) -> SchemaBody:
    schema = doc.get("schema")
    if not isinstance(schema, str):
        raise errors.invalid_schema('the body has no "schema" string')
    if not schema.strip():
        raise errors.RegistryError(422, 42201, "Empty schema")
    schema_type = doc.get("schemaType") or AVRO
    if schema_type not in SCHEMA_TYPES:
        raise errors.invalid_schema(f"unknown schema type {schema_type!r}: one of {', '.join(SCHEMA_TYPES)}")
    listed = doc.get("references")
    if listed is not None and not isinstance(listed, list):
        raise errors.unprocessable(f'"references" must be a list of references: {listed!r}')
    references = []
    for ref in listed or ():
        try:
            references.append(Reference(str(ref["name"]), str(ref["subject"]), int(ref["version"])))
        except (KeyError, TypeError, ValueError):
            raise errors.invalid_schema(
                f"a reference needs a name, a subject and a version: {ref!r}"
            ) from None
    numbers = []
    for name in ("id", "version"):
        value = doc.get(name)
        if value is not None and (not isinstance(value, int) or value < 1 or value in (-1, 0)):
            raise errors.unprocessable(f'"{name}" must be a positive integer: {value!r}')
        numbers.append(value)
    return SchemaBody(schema_type, schema, references, numbers[0], numbers[1])


def _schema_fields(stored: StoredSchema, text: str | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if stored.schema_type != AVRO:
        fields["schemaType"] = stored.schema_type
    if stored.references:
        fields["references"] = [r.as_json() for r in stored.references]
    fields["schema"] = stored.schema if text is None else text
    return fields


def _config_doc(config: Config, level_key: str) -> dict[str, Any]:
    """A config as an answer: GET names the level compatibilityLevel, PUT compatibility; Confluent leaves
    normalize out unless it is set."""
    doc: dict[str, Any] = {level_key: config.compatibility}
    if config.normalize:
        doc["normalize"] = True
    return doc


def _version_doc(found: SubjectVersion, text: str | None = None) -> dict[str, Any]:
    return {"subject": found.subject, "version": found.version, "id": found.schema_id} | _schema_fields(
        found.stored, text
    )


def _raw_schema(stored: StoredSchema) -> Response:
    """The schema itself as the body (the .../schema endpoints): JSON for Avro and JSON Schema."""
    if stored.schema_type == "PROTOBUF":
        return Response(stored.schema, media_type="text/plain")
    return Response(stored.schema, media_type=CONTENT_TYPE)


Handler = Callable[[Request, Caller], Awaitable[Response]]


class RegistryApp:
    """The routes; each handler runs with the caller Access found, and checks what it does."""

    def __init__(self, access: Access, cluster_id: str = "") -> None:
        self.access = access
        self.cluster_id = cluster_id
        self.observers: list[Callable[[str, int], None]] = []  # (route, status) per request, for metrics

    async def _formatted(self, registry: SchemaRegistry, schema_id: int, fmt: str | None) -> str | None:
        if not fmt:
            return None
        return (await registry.parsed(schema_id)).formatted(fmt)

    async def _need(self, caller: Caller, request: Request, operation: str, subject: str | None) -> None:
        if not await self.access.allowed(caller, request, operation, subject):
            what = f"subject '{subject}'" if subject is not None else "the schema registry"
            raise RegistryError(
                403, 40301, f"User {caller.principal} is not authorized to {operation} {what}"
            )

    # -- the registry --------------------------------------------------------------------------------
    async def root(self, request: Request, caller: Caller) -> Response:
        return _answer({})

    async def types(self, request: Request, caller: Caller) -> Response:
        return _answer(list(SCHEMA_TYPES))

    async def contexts(self, request: Request, caller: Caller) -> Response:
        return _answer(["."])

    async def metadata_id(self, request: Request, caller: Caller) -> Response:
        clusters = {"kafka-cluster": self.cluster_id, "schema-registry-cluster": "schema-registry"}
        return _answer({"scope": {"path": [], "clusters": clusters}})

    # -- schemas -------------------------------------------------------------------------------------
    async def schemas(self, request: Request, caller: Caller) -> Response:
        found = await caller.registry.every_schema(
            request.query_params.get("subjectPrefix", ""),
            _flag(request, "deleted"),
            _flag(request, "latestOnly"),
        )
        found = [f for f in found if await self.access.allowed(caller, request, READ, f.subject)]
        offset = int(request.query_params.get("offset", "0") or 0)
        limit = int(request.query_params.get("limit", "-1") or -1)
        found = found[offset:] if limit < 0 else found[offset : offset + limit]
        return _answer([_version_doc(f) for f in found])

    async def schema_by_id(self, request: Request, caller: Caller) -> Response:
        schema_id = self._id(request)
        stored = await caller.registry.schema(schema_id)
        doc = _schema_fields(
            stored, await self._formatted(caller.registry, schema_id, request.query_params.get("format"))
        )
        if _flag(request, "fetchMaxId"):
            doc["maxId"] = await caller.registry.max_id()
        return _answer(doc)

    async def schema_text_by_id(self, request: Request, caller: Caller) -> Response:
        return _raw_schema(await caller.registry.schema(self._id(request)))

    async def schema_subjects(self, request: Request, caller: Caller) -> Response:
        uses = await self._uses(request, caller)
        return _answer(sorted({subject for subject, _ in uses}))

    async def schema_versions(self, request: Request, caller: Caller) -> Response:
        uses = await self._uses(request, caller)
        return _answer([{"subject": subject, "version": version} for subject, version in uses])

    async def _uses(self, request: Request, caller: Caller) -> list[tuple[str, int]]:
        """The versions holding the id, among the subjects the caller may read (as /subjects lists them)."""
        uses = await caller.registry.uses_of(self._id(request), _flag(request, "deleted"))
        readable = {s for s, _ in uses if await self.access.allowed(caller, request, READ, s)}
        return [(subject, version) for subject, version in uses if subject in readable]

    @staticmethod
    def _id(request: Request) -> int:
        try:
            return int(request.path_params["id"])
        except ValueError:  # not an id at all: no such resource, as JAX-RS answers for an Integer
            raise errors.RegistryError(404, 404, "HTTP 404 Not Found") from None

    # -- subjects ------------------------------------------------------------------------------------
    async def subjects(self, request: Request, caller: Caller) -> Response:
        deleted_only = _flag(request, "deletedOnly")
        prefix = request.query_params.get("subjectPrefix", "")
        found = await caller.registry.subjects(deleted_only or _flag(request, "deleted"), prefix)
        if deleted_only:
            live = set(await caller.registry.subjects(False, prefix))
            found = [s for s in found if s not in live]
        return _answer([s for s in found if await self.access.allowed(caller, request, READ, s)])

    async def lookup(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, READ, subject)
        body = _schema_body(await _body(request))
        found = await caller.registry.lookup(
            subject,
            body.schema_type,
            body.schema,
            body.references,
            _flag(request, "normalize"),
            _flag(request, "deleted"),
        )
        return _answer(_version_doc(found))

    async def delete_subject(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, DELETE, subject)
        return _answer(await caller.registry.delete_subject(subject, _flag(request, "permanent")))

    async def versions(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, READ, subject)
        return _answer(await caller.registry.versions(subject, _flag(request, "deleted")))

    async def register(self, request: Request, caller: Caller) -> Response:
        subject = check_subject(_subject(request))
        await self._need(caller, request, WRITE, subject)
        body = _schema_body(await _body(request))
        schema_id, version = await caller.registry.register(
            subject,
            body.schema_type,
            body.schema,
            body.references,
            _flag(request, "normalize"),
            body.schema_id,
            body.version,
        )
        return _answer({"id": schema_id, "version": version})

    async def version(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, READ, subject)
        found = await caller.registry.version(
            subject, parse_version(request.path_params["version"]), _flag(request, "deleted")
        )
        text = await self._formatted(caller.registry, found.schema_id, request.query_params.get("format"))
        return _answer(_version_doc(found, text))

    async def version_schema(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, READ, subject)
        found = await caller.registry.version(
            subject, parse_version(request.path_params["version"]), _flag(request, "deleted")
        )
        return _raw_schema(found.stored)

    async def referenced_by(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, READ, subject)
        version = parse_version(request.path_params["version"])
        return _answer(await caller.registry.referenced_by(subject, version))

    async def delete_version(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, DELETE, subject)
        version = parse_version(request.path_params["version"])
        return _answer(await caller.registry.delete_version(subject, version, _flag(request, "permanent")))

    # -- compatibility -------------------------------------------------------------------------------
    async def compatible_with_version(self, request: Request, caller: Caller) -> Response:
        return await self._compatible(request, caller, parse_version(request.path_params["version"]), False)

    async def compatible_with_versions(self, request: Request, caller: Caller) -> Response:
        return await self._compatible(request, caller, None, True)

    async def _compatible(
        self, request: Request, caller: Caller, version: int | None, every: bool
    ) -> Response:
        subject = _subject(request)
        await self._need(caller, request, READ, subject)
        body = _schema_body(await _body(request))
        issues = await caller.registry.check(
            subject, version, body.schema_type, body.schema, body.references, every
        )
        doc: dict[str, Any] = {"is_compatible": not issues}
        if _flag(request, "verbose"):
            doc["messages"] = issues
        return _answer(doc)

    # -- config and mode -----------------------------------------------------------------------------
    async def get_config(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, DESCRIBE_CONFIG, subject or None)
        if subject and not _flag(request, "defaultToGlobal"):
            own = await caller.registry.own_config(subject)
            if own is None:
                raise errors.config_not_found(subject)
            config = own
        else:
            config = await caller.registry.config(subject)
        return _answer(_config_doc(config, "compatibilityLevel"))

    async def put_config(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, CONFIGURE, subject or None)
        doc = await _body(request)
        config = await caller.registry.set_config(subject, doc.get("compatibility"), doc.get("normalize"))
        return _answer(_config_doc(config, "compatibility"))

    async def delete_config(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, CONFIGURE, subject or None)
        config = await caller.registry.delete_config(subject)
        return _answer({"compatibilityLevel": config.compatibility})

    async def get_mode(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, DESCRIBE_CONFIG, subject or None)
        if subject and not _flag(request, "defaultToGlobal"):
            own = await caller.registry.own_mode(subject)
            if own is None:
                raise errors.mode_not_found(subject)
            return _answer({"mode": own})
        return _answer({"mode": await caller.registry.mode(subject)})

    async def put_mode(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, CONFIGURE, subject or None)
        doc = await _body(request)
        mode = await caller.registry.set_mode(subject, doc.get("mode"), _flag(request, "force"))
        return _answer({"mode": mode})

    async def delete_mode(self, request: Request, caller: Caller) -> Response:
        subject = _subject(request)
        await self._need(caller, request, CONFIGURE, subject or None)
        return _answer({"mode": await caller.registry.delete_mode(subject)})

    # -- the app -------------------------------------------------------------------------------------
    def _route(self, path: str, handler: Handler, *methods: str) -> Route:
        async def endpoint(request: Request) -> Response:
            media = _answer_type(request.headers.get("accept"))
            try:
                if media is None:
                    raise RegistryError(406, 406, "HTTP 406 Not Acceptable")
                if request.method in ("POST", "PUT") and not _readable_body(
                    request.headers.get("content-type")
                ):
                    raise RegistryError(415, 415, "HTTP 415 Unsupported Media Type")
                caller = await self.access.caller(request)
                response = await handler(request, caller)
                if media != CONTENT_TYPE and response.media_type == CONTENT_TYPE:
                    response.headers["content-type"] = media
            except RegistryError as e:
                response = _error(e)
            except _STORAGE_ERRORS as e:
                response = _error(errors.store_error(str(e) or type(e).__name__))
            for observe in self.observers:
                observe(path, response.status_code)
            return response

        return Route(path, endpoint, methods=list(methods))

    def app(self) -> Starlette:
        r = self._route
        subject = "/subjects/{subject}"
        version = subject + "/versions/{version}"
        routes = [
            r("/", self.root, "GET"),
            r("/schemas", self.schemas, "GET"),
            r("/schemas/types", self.types, "GET"),
            r("/schemas/ids/{id}", self.schema_by_id, "GET"),
            r("/schemas/ids/{id}/schema", self.schema_text_by_id, "GET"),
            r("/schemas/ids/{id}/subjects", self.schema_subjects, "GET"),
            r("/schemas/ids/{id}/versions", self.schema_versions, "GET"),
            r("/subjects", self.subjects, "GET"),
            r(subject, self.lookup, "POST"),
            r(subject, self.delete_subject, "DELETE"),
            r(subject + "/versions", self.versions, "GET"),
            r(subject + "/versions", self.register, "POST"),
            r(version, self.version, "GET"),
            r(version, self.delete_version, "DELETE"),
            r(version + "/schema", self.version_schema, "GET"),
            r(version + "/referencedby", self.referenced_by, "GET"),
            r("/compatibility" + version, self.compatible_with_version, "POST"),
            r("/compatibility" + subject + "/versions", self.compatible_with_versions, "POST"),
            r("/config", self.get_config, "GET"),
            r("/config", self.put_config, "PUT"),
            r("/config", self.delete_config, "DELETE"),
            r("/config/{subject}", self.get_config, "GET"),
            r("/config/{subject}", self.put_config, "PUT"),
            r("/config/{subject}", self.delete_config, "DELETE"),
            r("/mode", self.get_mode, "GET"),
            r("/mode", self.put_mode, "PUT"),
            r("/mode", self.delete_mode, "DELETE"),
            r("/mode/{subject}", self.get_mode, "GET"),
            r("/mode/{subject}", self.put_mode, "PUT"),
            r("/mode/{subject}", self.delete_mode, "DELETE"),
            r("/contexts", self.contexts, "GET"),
            r("/v1/metadata/id", self.metadata_id, "GET"),
        ]

        async def http_error(request: Request, exc: Exception) -> Response:
            status = exc.status_code if isinstance(exc, HTTPException) else 500
            detail = exc.detail if isinstance(exc, HTTPException) else "Internal Server Error"
            return _error(RegistryError(status, status, f"HTTP {status} {detail}"))

        async def unexpected(request: Request, exc: Exception) -> Response:
            return _error(errors.store_error(str(exc) or type(exc).__name__))

        return Starlette(
            routes=routes,
            middleware=[Middleware(_Paths)],
            exception_handlers={HTTPException: http_error, Exception: unexpected},
        )

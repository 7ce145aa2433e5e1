"""The schema-registry side of the console: Confluent's REST API over HTTP (httpx), as the page's user
(HTTP Basic with their SASL user name and password, as the broker's registry authenticates them), and
the schemas by id that the message browser decodes records with, fetched and parsed once per identity.
Blocking: the pages call it in a thread (run_in_threadpool).

Every failure is a RegistryFailure that says what happened in a sentence: the registry cannot be
reached, or it answered with an error (Confluent's {"error_code", "message"}).
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from ...schemas import PROTOBUF, Dependency, ParsedSchema, SchemaError, parse, wire
from ..client_options import ClientSettings

DEFAULT_PORT = 8081
ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
MAX_CACHED = 1000  # parsed schemas kept per identity (ids never change their schema: no expiry)
MISSING_S = 30.0  # an id the registry does not know (or whose schema does not parse) is asked again after
DOWN_S = 10.0  # after the registry could not be reached, decoding does not ask it again for this long
MAX_REFERENCE_DEPTH = 32


class RegistryFailure(Exception):
    """The registry cannot be reached, or refused; `status` is the HTTP status a page answers with."""

    def __init__(self, message: str, status: int = 502, error_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_code = error_code


@dataclass(frozen=True)
class SubjectRow:
    name: str
    version: int | None  # the latest version; None when the registry did not say
    schema_id: int | None
    schema_type: str | None


@dataclass(frozen=True)
class Reference:
    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class SchemaVersion:
    version: int
    schema_id: int
    schema_type: str
    text: str  # as the page shows it: pretty-printed JSON (Avro, JSON Schema), the .proto text (Protobuf)
    references: list[Reference]


@dataclass(frozen=True)
class Setting:
    value: str | None  # None: the registry does not let this user see it (`refused` says why)
    own: bool = False  # the subject's own setting, not the registry's
    refused: str | None = None


@dataclass(frozen=True)
class Subject:
    name: str
    versions: list[SchemaVersion]
    compatibility: Setting
    mode: Setting


@dataclass(frozen=True)
class SchemaById:
    schema_id: int
    schema_type: str
    text: str
    references: list[Reference]
    uses: list[tuple[str, int]]  # (subject, version) that have it


@dataclass(frozen=True)
class Decoded:
    schema_id: int
    schema_type: str
    value: object  # plain data (dicts, lists, str, int, ...)


def default_url(bootstrap_servers: str) -> str:
    """http://<the first bootstrap server's host>:8081, where every broker serves its registry by default."""
    first = bootstrap_servers.split(",")[0].strip()
    if first.startswith("["):  # [IPv6]:port
        host = first[: first.find("]") + 1] if "]" in first else first
    else:
        host = first.rpartition(":")[0] if ":" in first else first
    return f"http://{host or 'localhost'}:{DEFAULT_PORT}"


def pretty(schema_type: str, text: str) -> str:
    """A schema as a page shows it: JSON indented (Avro, JSON Schema), a .proto as it is."""
    if schema_type == PROTOBUF:
        return text
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def _references(doc: dict[str, Any]) -> list[Reference]:
    refs = []
    for ref in doc.get("references") or ():
        try:
            refs.append(Reference(str(ref["name"]), str(ref["subject"]), int(ref["version"])))
        except (KeyError, TypeError, ValueError):
            continue
    return refs


def _type(doc: dict[str, Any]) -> str:
    return str(doc.get("schemaType") or "AVRO")  # Confluent leaves it out for Avro


def _subject_path(subject: str) -> str:
    return quote(subject, safe="")


class RegistrySide:
    """One identity's HTTP client for the registry, and its cache of parsed schemas by id."""

    def __init__(self, url: str, client: ClientSettings) -> None:
        self.url = url.rstrip("/")
        self.client = client
        self.timeout_s = client.timeout_s
        self._http: httpx.Client | None = None
        self._lock = threading.Lock()
        self._parsed: OrderedDict[int, ParsedSchema] = OrderedDict()
        self._missing: dict[int, float] = {}  # id -> when it was found missing or unparseable
        self._down_since: float | None = None

    # -- HTTP -----------------------------------------------------------------------------------------
    @property
    def http(self) -> httpx.Client:
        with self._lock:
            if self._http is None:
                self._http = self._build()
            return self._http

    def _build(self) -> httpx.Client:
        options: dict[str, Any] = {}
        settings = self.client
        if settings.uses_sasl and settings.sasl_username:
            options["auth"] = httpx.BasicAuth(settings.sasl_username, settings.sasl_password or "")
        if self.url.startswith("https:"):
            context = ssl.create_default_context(cafile=settings.ssl_cafile)
            if settings.ssl_certfile:
                context.load_cert_chain(settings.ssl_certfile, settings.ssl_keyfile,
                                        settings.ssl_keyfile_password)  # fmt: skip
            options["verify"] = context
        timeout = httpx.Timeout(self.timeout_s, connect=min(self.timeout_s, 5.0))
        return httpx.Client(base_url=self.url, timeout=timeout, headers={"Accept": ACCEPT}, **options)

    def get(self, path: str, **params: Any) -> Any:
        """The JSON of a GET; RegistryFailure when the registry cannot be reached or answers an error."""
        try:
            response = self.http.get(path, params=params or None)
        except httpx.HTTPError as exc:
            with self._lock:
                self._down_since = time.monotonic()
            raise RegistryFailure(
                f"The schema registry at {self.url} cannot be reached ({type(exc).__name__}: {exc})."
            ) from None
        with self._lock:
            self._down_since = None
        if response.status_code >= 400:
            raise _refusal(response)
        try:
            return response.json()
        except ValueError:
            raise RegistryFailure(f"The schema registry at {self.url} answered something not JSON "
                                  f"(HTTP {response.status_code}).") from None  # fmt: skip

    def close(self) -> None:
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()

    # -- pages ----------------------------------------------------------------------------------------
    def subjects(self) -> list[SubjectRow]:
        """Every subject with its latest version's number, schema id and type."""
        names = [str(s) for s in self.get("/subjects")]
        latest: dict[str, dict[str, Any]] = {}
        try:
            docs = self.get("/schemas", latestOnly="true")
        except RegistryFailure as exc:
            if exc.status != 404:  # a registry without GET /schemas: each subject's latest, one by one
                raise
            docs = [self.get(f"/subjects/{_subject_path(n)}/versions/latest") for n in names]
        for doc in docs:
            subject = str(doc.get("subject"))
            if subject not in latest or int(doc.get("version", 0)) > int(latest[subject].get("version", 0)):
                latest[subject] = doc
        rows = []
        for name in sorted(names):
            doc = latest.get(name)
            if doc is None:
                rows.append(SubjectRow(name, None, None, None))
            else:
                rows.append(SubjectRow(name, int(doc["version"]), int(doc["id"]), _type(doc)))
        return rows

    def global_settings(self) -> tuple[Setting, Setting]:
        """The registry's compatibility level and mode (a user may be refused them: DESCRIBE_CONFIGS)."""
        return (self._allowed(lambda: Setting(str(self.get("/config")["compatibilityLevel"]))),
                self._allowed(lambda: Setting(str(self.get("/mode")["mode"]))))  # fmt: skip

    @staticmethod
    def _allowed(ask: Callable[[], Setting]) -> Setting:
        try:
            return ask()
        except RegistryFailure as exc:
            if exc.status not in (401, 403):
                raise
            return Setting(None, refused=exc.message)

    def subject(self, name: str) -> Subject:
        path = _subject_path(name)
        versions = []
        for number in self.get(f"/subjects/{path}/versions"):
            doc = self.get(f"/subjects/{path}/versions/{int(number)}")
            kind = _type(doc)
            versions.append(SchemaVersion(int(doc["version"]), int(doc["id"]), kind,
                                          pretty(kind, str(doc["schema"])), _references(doc)))  # fmt: skip
        compatibility = self._allowed(
            lambda: self._setting(f"/config/{path}", "/config", "compatibilityLevel", 40408)
        )
        mode = self._allowed(lambda: self._setting(f"/mode/{path}", "/mode", "mode", 40409))
        return Subject(name, versions, compatibility, mode)

    def _setting(self, own_path: str, global_path: str, key: str, none_code: int) -> Setting:
        """The subject's own setting, else the registry's."""
        try:
            return Setting(str(self.get(own_path)[key]), True)
        except RegistryFailure as exc:
            if exc.error_code != none_code:
                raise
        return Setting(str(self.get(global_path)[key]), False)

    def schema(self, schema_id: int) -> SchemaById:
        doc = self.get(f"/schemas/ids/{schema_id}")
        kind = _type(doc)
        used = self.get(f"/schemas/ids/{schema_id}/versions")
        uses = [(str(u["subject"]), int(u["version"])) for u in used]
        return SchemaById(schema_id, kind, pretty(kind, str(doc["schema"])), _references(doc), uses)

    def topic_subjects(self, topic: str) -> list[str]:
        """The subjects named after the topic (TopicNameStrategy): <topic>-key and <topic>-value. Not
        asked again for a while after the registry could not be reached (the topic's page waits on it)."""
        with self._lock:
            down = self._down_since is not None and time.monotonic() - self._down_since < DOWN_S
        if down:
            raise RegistryFailure(f"The schema registry at {self.url} cannot be reached (it could not be "
                                  f"seconds ago; asked again shortly).")  # fmt: skip
        wanted = {wire.topic_subject(topic, True), wire.topic_subject(topic, False)}
        return sorted(s for s in self.get("/subjects", subjectPrefix=topic) if s in wanted)

    # -- decoding -------------------------------------------------------------------------------------
    def decode(self, data: bytes) -> Decoded | None:
        """A key or value in Confluent's wire format, decoded with its schema; None when it is not one,
        its id is unknown, the registry cannot be asked, or the bytes are not of that schema."""
        schema_id = wire.schema_id(data)
        if schema_id is None:
            return None
        parsed = self.parsed(schema_id)
        if parsed is None:
            return None
        try:
            value = parsed.decode(data[wire.HEADER :])
        except Exception:  # SchemaError, or a decoder's own failure on foreign bytes: shown raw
            return None
        return Decoded(schema_id, parsed.schema_type, value)

    def parsed(self, schema_id: int) -> ParsedSchema | None:
        """The schema of an id, parsed (cached); None when it cannot be had now."""
        now = time.monotonic()
        with self._lock:
            if schema_id in self._parsed:
                self._parsed.move_to_end(schema_id)
                return self._parsed[schema_id]
            missing = self._missing.get(schema_id)
            if missing is not None and now - missing < MISSING_S:
                return None
            if self._down_since is not None and now - self._down_since < DOWN_S:
                return None
        try:
            doc = self.get(f"/schemas/ids/{schema_id}")
            kind = _type(doc)
            found = parse(kind, str(doc["schema"]), self._dependencies(_references(doc), set(), 0))
        except (RegistryFailure, SchemaError, KeyError, TypeError, ValueError):
            self._forget(schema_id)  # unknown, refused, unparseable or unreachable: asked again later
            return None
        with self._lock:
            self._parsed[schema_id] = found
            self._missing.pop(schema_id, None)
            while len(self._parsed) > MAX_CACHED:
                self._parsed.popitem(last=False)
        return found

    def _forget(self, schema_id: int) -> None:
        with self._lock:
            if len(self._missing) > MAX_CACHED:
                self._missing.clear()
            self._missing[schema_id] = time.monotonic()

    def _dependencies(self, refs: Sequence[Reference], seen: set[str], depth: int) -> list[Dependency]:
        """The referenced schemas, transitively, dependencies first and each once (what parse needs)."""
        if depth > MAX_REFERENCE_DEPTH:
            raise SchemaError("references nest too deeply")
        found: list[Dependency] = []
        for ref in refs:
            if ref.name in seen:
                continue
            seen.add(ref.name)
            doc = self.get(f"/subjects/{_subject_path(ref.subject)}/versions/{ref.version}", deleted="true")
            found += self._dependencies(_references(doc), seen, depth + 1)
            found.append(Dependency(ref.name, str(doc["schema"])))
        return found


def _refusal(response: httpx.Response) -> RegistryFailure:
    try:
        doc = response.json()
        message, code = str(doc["message"]), int(doc["error_code"])
    except (ValueError, KeyError, TypeError):
        return RegistryFailure(f"The schema registry answered HTTP {response.status_code}.",
                               response.status_code)  # fmt: skip
    return RegistryFailure(
        f"The schema registry refused: {message} (error {code}).", response.status_code, code
    )

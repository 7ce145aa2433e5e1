"""Who may use the schema registry: the broker's users and ACLs, so the registry opens no door the broker
keeps closed (docs/schemas.md, "Security").

When the broker has a SASL listener, every request authenticates with HTTP Basic as one of its users: the
password must derive one of the user's SCRAM credentials, as SASL PLAIN checks it. The user's tenant picks the
registry (each keyspace has its own). With the authorizer on, each request is checked against the ACLs of that
keyspace, a subject standing for the topic it is named after:

| request | ACL |
|---|---|
| read a subject, its versions, lookups, compatibility checks | DESCRIBE on the topic |
| register a schema | WRITE on the topic |
| delete versions or the subject | DELETE on the topic |
| a subject's config or mode: read / change | DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic |
| the global config or mode: read / change | DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster |
| schemas by id, schema types | authentication only (a consumer decodes by id) |

A subject named after no topic ("<topic>-key", "<topic>-value", "<topic>-<record>" with a topic that exists
or not) is a record-name subject: it stands for the cluster (DESCRIBE and ALTER on CLUSTER).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request

from ...config import Listener
from ...registry.api import CONFIGURE, DELETE, DESCRIBE_CONFIG, READ, WRITE, Caller
from ...registry.errors import RegistryError
from ...registry.service import SchemaRegistry
from ...security.acls import CLUSTER_NAME, AclOperation, ResourceType
from ...security.scram import password_matches
from ...storage.topics.config import valid_topic_name
from ..context import BrokerContext
from ..net.session import RequestScope, Session

CHECKED_SECONDS = 60.0  # a password that matched is not derived again for this long (PBKDF2 costs ms)
_TOPIC_OPS = {
    READ: AclOperation.DESCRIBE,
    WRITE: AclOperation.WRITE,
    DELETE: AclOperation.DELETE,
    CONFIGURE: AclOperation.ALTER_CONFIGS,
    DESCRIBE_CONFIG: AclOperation.DESCRIBE_CONFIGS,
}
_CLUSTER_OPS = {
    READ: AclOperation.DESCRIBE,
    WRITE: AclOperation.ALTER,
    DELETE: AclOperation.ALTER,
    CONFIGURE: AclOperation.ALTER_CONFIGS,
    DESCRIBE_CONFIG: AclOperation.DESCRIBE_CONFIGS,
}


def subject_topic(subject: str) -> str | None:
    """The topic a subject is named after by TopicNameStrategy, or None."""
    for suffix in ("-value", "-key"):
        if subject.endswith(suffix) and valid_topic_name(subject.removesuffix(suffix)):
            return subject.removesuffix(suffix)
    return None


@dataclass(frozen=True, slots=True)
class _Who:
    ctx: BrokerContext
    scope: RequestScope


class BrokerAccess:
    def __init__(
        self,
        base: BrokerContext,
        context_of: Callable[[str | None], BrokerContext],
        registry_of: Callable[[BrokerContext], SchemaRegistry],
        listener: Listener,
        authenticate: bool,
    ) -> None:
        self.base = base
        self.context_of = context_of
        self.registry_of = registry_of
        self.listener = listener
        self.authenticate = authenticate
        self._checked: dict[tuple[str, bytes], float] = {}  # (user, password digest) -> when it matched

    async def caller(self, request: Request) -> Caller:
        host = request.client.host if request.client else ""
        if not self.authenticate:
            scope = RequestScope(Session(self.listener, host))
            return Caller(self.registry_of(self.base), context=_Who(self.base, scope))
        user, password = _basic(request.headers.get("authorization"))
        tenant = await self._check(user, password)
        try:
            ctx = self.context_of(tenant)
        except ValueError:
            raise _unauthorized("the user's tenant is not valid") from None
        session = Session(self.listener, host, principal=f"User:{user}", tenant=tenant)
        return Caller(self.registry_of(ctx), f"User:{user}", _Who(ctx, RequestScope(session)))

    async def _check(self, user: str, password: str) -> str | None:
        """The user's tenant, once the password is the user's; 401 otherwise."""
        stored = await self.base.store.user(self.base.ks, user)
        if stored is None or not stored.credentials:
            raise _unauthorized("unknown user or wrong password")
        digest = hashlib.sha256(password.encode()).digest()
        key = (user, digest)
        now = time.monotonic()
        if now - self._checked.get(key, -CHECKED_SECONDS) >= CHECKED_SECONDS:
            credentials = list(stored.credentials.values())
            matched = await asyncio.to_thread(lambda: any(password_matches(c, password) for c in credentials))
            if not matched:
                raise _unauthorized("unknown user or wrong password")
            if len(self._checked) > 10_000:
                self._checked.clear()
            self._checked[key] = now
        return stored.tenant

    async def allowed(self, caller: Caller, request: Request, operation: str, subject: str | None) -> bool:
        who = caller.context
        assert isinstance(who, _Who)
        authorizer = who.ctx.access.authorizer
        topic = subject_topic(subject) if subject is not None else None
        if topic is not None:
            return await authorizer.allowed(_TOPIC_OPS[operation], ResourceType.TOPIC, topic, who.scope)
        return await authorizer.allowed(
            _CLUSTER_OPS[operation], ResourceType.CLUSTER, CLUSTER_NAME, who.scope
        )


def _unauthorized(why: str) -> RegistryError:
    return RegistryError(401, 401, f"Unauthorized: {why}")


def _basic(header: str | None) -> tuple[str, str]:
    scheme, _, token = (header or "").partition(" ")
    if scheme.lower() != "basic" or not token:
        raise _unauthorized("HTTP Basic credentials of a broker user are needed")
    try:
        user, colon, password = base64.b64decode(token.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise _unauthorized("the Basic credentials are not base64 of user:password") from None
    if not colon or not user:
        raise _unauthorized("the Basic credentials are not user:password")
    return user, password

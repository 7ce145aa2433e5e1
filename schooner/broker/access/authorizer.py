"""The broker's authorizer: Kafka's ACL decisions (security/acls.py) over the bindings kept in Redis
(storage/security/acls.py), cached per keyspace.

Handlers ask it one question per request (or per resource) and stay thin:
    if not await ctx.access.authorizer.allowed(Op.WRITE, Resource.TOPIC, name): ...TOPIC_AUTHORIZATION_FAILED
With `authorizer = false` every question answers "allowed" at once, without touching Redis.

Freshness: every change PUBLISHes on the keyspace's ACL channel, and the broker's subscription marks the
cache stale (server.py). As a safety net for a lost notice, a question asked a second or more after the
last check first compares the stored version with the cached one (one GET). So a change is in force on
every broker within a second. If the bindings were never loaded and Redis cannot be reached, everything
but a super user's request is denied: failing closed is the safe side of an outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Iterable

from ...config import Settings
from ...security.acls import (
    CLUSTER_NAME,
    OPERATIONS,
    AclBinding,
    AclOperation,
    AclSet,
    ResourceType,
    operations_bits,
)
from ...storage.redis.calls import StorageError
from ...storage.store import Store
from ..net.refusals import peer_of
from ..net.session import RequestScope

log = logging.getLogger(__name__)

Op = AclOperation
Resource = ResourceType

VERSION_CHECK_SECONDS = 1.0  # the safety net: a lost notice delays a change at most this long
DENIAL_LOG_SECONDS = 60.0  # a denial is logged once per principal, resource and operation per minute
_STORAGE_ERRORS = (StorageError, OSError)


class Authorizer:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.enabled = settings.authorizer
        self.super_users = frozenset(settings.super_users)
        self.allow_if_no_acl = settings.allow_everyone_if_no_acl_found
        self._store = store
        self._acls: AclSet | None = None
        self._version = -1
        self._checked_at = -math.inf
        self._stale = True
        self._noticed = False  # a notice came while a load was under way
        self._refresh: asyncio.Future[None] | None = None
        self._denials_logged: dict[tuple[str, str, int, int, str], float] = {}
        self._load_failed = False

    # -- questions -------------------------------------------------------------------------------
    async def allowed(self, op: AclOperation, rtype: ResourceType, name: str, scope: RequestScope) -> bool:
        """Whether the request's principal may perform `op` on the resource."""
        if not self.enabled:
            return True
        caller = scope.caller
        if caller.principal in self.super_users:
            return True
        acls = await self._current()
        decision = acls is not None and acls.authorize(caller, op, rtype, name, self.allow_if_no_acl)
        if not decision:
            self._log_denial(scope, op, rtype, name)
        return decision

    async def allowed_names(
        self, op: AclOperation, rtype: ResourceType, names: Iterable[str], scope: RequestScope
    ) -> set[str]:
        """The names among `names` whose resource the principal may perform `op` on (the batch form).
        Denials are not logged: callers use this to filter listings."""
        if not self.enabled:
            return set(names)
        caller = scope.caller
        if caller.principal in self.super_users:
            return set(names)
        acls = await self._current()
        if acls is None:
            return set()
        return {n for n in names if acls.authorize(caller, op, rtype, n, self.allow_if_no_acl)}

    async def allowed_on_cluster(self, op: AclOperation, scope: RequestScope) -> bool:
        """`op` on the CLUSTER resource: what broker-wide APIs (DescribeCluster, CreateAcls, the user
        credential APIs, ...) need."""
        return await self.allowed(op, Resource.CLUSTER, CLUSTER_NAME, scope)

    async def allowed_any(self, op: AclOperation, rtype: ResourceType, scope: RequestScope) -> bool:
        """Whether the principal may perform `op` on at least one resource of the type (Kafka's
        authorizeByResourceType): an idempotent producer needs WRITE on some topic."""
        if not self.enabled:
            return True
        caller = scope.caller
        if caller.principal in self.super_users:
            return True
        acls = await self._current()
        return acls is not None and acls.authorize_any(caller, op, rtype, self.allow_if_no_acl)

    async def operations(self, rtype: ResourceType, name: str, scope: RequestScope) -> int:
        """Kafka's *_authorized_operations bit field for the resource. Without an authorizer (and for a
        super user) every operation of the type, as Kafka reports it."""
        every = OPERATIONS.get(rtype, ())
        if not self.enabled:
            return operations_bits(every)
        caller = scope.caller
        if caller.principal in self.super_users:
            return operations_bits(every)
        acls = await self._current()
        if acls is None:
            return 0
        return operations_bits(acls.authorized_operations(caller, rtype, name, self.allow_if_no_acl))

    # -- the bindings ------------------------------------------------------------------------------
    async def bindings(self) -> AclSet:
        """The bindings as Redis has them now (DescribeAcls, DeleteAcls); raises StorageError."""
        version, acls = await self._store.acls()
        self._adopt(version, acls)
        return acls

    @property
    def version(self) -> int:
        """The version of the bindings in force here (-1 before the first load)."""
        return self._version

    async def create(self, bindings: Iterable[AclBinding]) -> None:
        await self._store.add_acls(bindings)
        self.changed()
        await self.refresh()  # the client that made the change sees it on its next request here

    async def delete(self, bindings: Iterable[AclBinding]) -> None:
        await self._store.remove_acls(bindings)
        self.changed()
        await self.refresh()

    def changed(self) -> None:
        """The bindings may have changed: load them before the next decision. Called when the notice
        subscription (re)starts, as notices may have been missed meanwhile."""
        self._stale = True

    def notice(self) -> None:
        """A change notice: the bindings are loaded again now, ahead of the next request."""
        self.changed()
        self._noticed = True
        with contextlib.suppress(RuntimeError):  # no running loop: the next decision loads them
            self._start_refresh()

    async def refresh(self) -> None:
        """Loads the bindings now if they are stale or their version moved (server.py calls it at start)."""
        await asyncio.shield(self._start_refresh())

    def _start_refresh(self) -> asyncio.Future[None]:
        """The load under way, or a new one: requests arriving together share one round trip."""
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.ensure_future(self._load())
        return self._refresh

    # -- the cache -------------------------------------------------------------------------------------
    async def _current(self) -> AclSet | None:
        fresh = time.monotonic() - self._checked_at < VERSION_CHECK_SECONDS
        if self._acls is None or self._stale or not fresh:
            await self.refresh()
        return self._acls

    async def _load(self) -> None:
        """Loads again when a notice came during the read: it may announce a change that the read, begun
        before it, missed (the notice joined the load under way rather than start one of its own)."""
        while True:
            self._noticed = False
            if not await self._load_once() or not self._noticed:
                return

    async def _load_once(self) -> bool:
        """False when Redis could not be read."""
        started = time.monotonic()
        try:
            if self._acls is not None and not self._stale:
                version = await self._store.acls_version()
                if version == self._version:
                    self._checked_at = started
                    self._load_failed = False
                    return True
            self._stale = False  # before the read: a notice arriving during it marks the cache again
            version, acls = await self._store.acls()
        except _STORAGE_ERRORS as exc:
            self._checked_at = started  # try again in a second, not on every request
            if not self._load_failed:
                self._load_failed = True
                held = "the cached ACLs stay in force" if self._acls is not None else "requests are denied"
                log.warning("cannot read the ACLs from Redis (%s); %s until it answers", exc, held)
            return False
        self._adopt(version, acls, started)
        return True

    def _adopt(self, version: int, acls: AclSet, checked_at: float | None = None) -> None:
        if version < self._version and not self._stale:
            return  # an older read that finished after a newer one
        self._acls, self._version = acls, version
        self._checked_at = time.monotonic() if checked_at is None else checked_at
        self._load_failed = False

    def _log_denial(self, scope: RequestScope, op: AclOperation, rtype: ResourceType, name: str) -> None:
        caller = scope.caller
        key = (caller.principal, caller.host, int(op), int(rtype), name)
        now = time.monotonic()
        if now - self._denials_logged.get(key, -math.inf) < DENIAL_LOG_SECONDS:
            return
        if len(self._denials_logged) >= 10_000:
            self._denials_logged = {
                k: t for k, t in self._denials_logged.items() if now - t < DENIAL_LOG_SECONDS
            }
        self._denials_logged[key] = now
        fields = {
            "client_id": scope.client_id, "peer": peer_of(scope.session, caller.host),
            "principal": caller.principal, "reason": "authorization denied", "operation": op.name,
            "resource_type": rtype.name, "resource": name,
        }  # fmt: skip
        log.info(
            "denied: principal %s from %s may not %s %s %r", caller.principal, caller.host or "?", op.name,
            rtype.name, name, extra=fields,
        )  # fmt: skip

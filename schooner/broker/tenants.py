"""The tenants this broker serves: one BrokerContext per tenant, made on first sight.

A tenant is a name on users (storage/security/users.py). Its topics, groups and transactional ids live
under its own keyspace, `<prefix>:tenant:<name>` (Keyspace.tenant), so two tenants may each have a topic
`orders`, and whatever a handler lists (Metadata, ListGroups, ListTransactions, ...) is its tenant's
only. The broker finds tenants in storage at start and on a short refresh, so the duties it runs per
keyspace (retention, group sessions, transaction timeouts, wake-ups) cover tenants with no client on
this broker; a session of a tenant not seen yet makes its context at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..storage.keys import check_tenant_name
from .context import BrokerContext

log = logging.getLogger(__name__)

REFRESH_SECONDS = 5.0  # how often the users hash is read for tenants made on another broker


class Tenants:
    def __init__(self, base: BrokerContext, on_new: Callable[[BrokerContext], None]) -> None:
        """on_new(ctx) starts the broker's per-keyspace duties for a tenant's new context."""
        self.base = base
        self._on_new = on_new
        self._contexts: dict[str, BrokerContext] = {}
        self._refused: set[str] = set()  # stored tenant names that are not valid, warned about once

    def context(self, tenant: str | None) -> BrokerContext:
        """The context of the tenant's keyspace (the deployment's for None), made on first use.
        ValueError for a name no tenant can have: its session is not served."""
        if tenant is None:
            return self.base
        ctx = self._contexts.get(tenant)
        if ctx is None:
            ctx = self._contexts[check_tenant_name(tenant)] = self.base.tenant_context(tenant)
            self._on_new(ctx)
        return ctx

    @property
    def contexts(self) -> list[BrokerContext]:
        """The deployment's context and every tenant's made so far."""
        return [self.base, *self._contexts.values()]

    async def refresh(self) -> None:
        """Makes a context for every tenant named in the users hash that has none yet."""
        base = self.base
        for name in await base.store.tenants(base.ks):
            try:
                self.context(name)
            except ValueError as exc:
                if name not in self._refused:
                    self._refused.add(name)
                    log.warning("ignoring the stored tenant %r: %s", name, exc)

"""The broker process: registers in Redis, serves Kafka clients, and keeps background duties running."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..config import Listener, Settings
from ..protocol.messages import Answer, Request
from ..storage.cluster import BrokerInfo
from ..storage.keys import Keyspace
from ..storage.log.notices import ShardedAppendNotices
from ..storage.quotas import QuotaNotices
from ..storage.redis import client as redis_client
from ..storage.redis.calls import StorageError
from ..storage.store import Store, open_lane, open_read_lane
from ..storage.topics.config import InvalidConfig, validate_defaults
from .access.quotas import ClientQuotas
from .context import BrokerContext, open_context
from .dispatch import dispatcher
from .metrics import BrokerMetrics
from .metrics.exporter import MetricsServer
from .metrics.gauges import ScrapeGauges, snapshot
from .net.limits import ConnectionStats
from .net.listener import ClientConnections
from .net.session import RequestScope, Session
from .net.tls import TlsSetupError, certificate_principals, handshake_timeout, server_contexts
from .schemas.server import RegistryServer, open_registry_server
from .tenants import REFRESH_SECONDS, Tenants
from .upkeep import Upkeep

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 3.0
RECANCEL_SECONDS = 0.1  # how often a task that absorbed its cancel is cancelled again at stop
GC_YOUNG_THRESHOLD = 50_000  # allocations between young collections (the default is 700)


class Broker:
    def __init__(self, settings: Settings, redis_url: str) -> None:
        self.settings = settings
        self.redis_url = redis_url
        self.ctx: BrokerContext | None = None  # the deployment's
        self.tenants: Tenants | None = None  # every tenant's context (broker/tenants.py)
        # Serves one request with its session's tenant's context (dispatch.dispatcher).
        self.dispatch: Callable[[Request, RequestScope], Awaitable[Answer]] | None = None
        self._server: asyncio.Server | None = None  # the first listener's
        self.servers: dict[str, asyncio.Server] = {}  # listener protocol -> its server
        self._tasks: list[asyncio.Task[Any]] = []  # the broker's own: heartbeat, tenant refresh
        self.upkeeps: dict[str | None, Upkeep] = {}  # per keyspace: None for the deployment's, tenants
        self._clients = ClientConnections(settings)
        self._connections = self._clients.tasks  # one task per open client connection
        self._stopping = False
        # Prometheus metrics, when metrics_port is set (broker/metrics/): counted by the dispatch, the
        # handlers and the storage observer, served by metrics_server.
        self.metrics: BrokerMetrics | None = None
        self.metrics_server: MetricsServer | None = None
        self.registry_server: RegistryServer | None = None  # the schema registry's HTTP (broker/schemas/)

    @property
    def port(self) -> int:
        """The first listener's port."""
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def port_of(self, protocol: str) -> int:
        """The port of the listener for this security protocol (PLAINTEXT, SSL, ...)."""
        return int(self.servers[protocol].sockets[0].getsockname()[1])

    @property
    def connection_stats(self) -> ConnectionStats:
        return self._clients.stats

    def sessions(self) -> list[Session]:
        """The sessions of the open client connections."""
        return self._clients.sessions()

    @property
    def sharded_notices(self) -> ShardedAppendNotices | None:
        """On a Redis Cluster: the deployment keyspace's sharded wake-up subscriptions."""
        upkeep = self.upkeeps.get(None)
        return upkeep.sharded_notices if upkeep else None

    async def start(self) -> None:
        s = self.settings
        listeners = s.listeners_in_force()
        try:
            tls_contexts = server_contexts(s, listeners)
            tls_timeout = handshake_timeout(s) if tls_contexts else None
        except TlsSetupError as exc:
            raise StartupRefused(str(exc)) from None
        try:
            validate_defaults(s.topic_defaults, s.cold_store_root is not None)
        except InvalidConfig as exc:
            raise StartupRefused(f"topic_defaults: {exc}") from None
        if tls_contexts:
            self._clients.certificate_principal = certificate_principals(s)
        redis = redis_client.connect(self.redis_url, s.redis_timeout_ms, health_check_interval=10)
        lane, read_lane = open_lane(redis, s.redis_timeout_ms), open_read_lane(redis, s.redis_timeout_ms)
        store = Store(redis, Keyspace(s.keyspace), lane, s.acks_all_fsync, read_lane)
        if s.metrics_address is not None:
            self.metrics = BrokerMetrics()
            store.observe(self.metrics.redis_round_trip)
        await _check_eviction(store, s.allow_evicting_redis)
        broker_id = s.broker_id if s.broker_id is not None else await store.allocate_broker_id()
        for listener in listeners:
            tls = tls_contexts.get(listener.protocol)
            # A deeper accept queue than asyncio's 100, so a burst of connects is not dropped and retried.
            # A TLS handshake not done within ssl_handshake_timeout_ms closes its connection.
            self.servers[listener.protocol] = await asyncio.start_server(
                functools.partial(self._on_client, listener),
                listener.host or None,
                listener.port,
                limit=1 << 20,
                backlog=1024,
                ssl=tls,
                ssl_handshake_timeout=tls_timeout if tls else None,
                start_serving=False,  # bound now (a port in use fails here), served once all is set up
            )
        self._server = self.servers[listeners[0].protocol]
        # Every listener's advertised address; host and port stay the first listener's.
        endpoints = {x.protocol: s.advertised_for(x, self.port_of(x.protocol)) for x in listeners}
        host, port = endpoints[listeners[0].protocol]
        me = BrokerInfo(broker_id, host, port, s.rack, endpoints)
        quotas = ClientQuotas(s, store)
        await quotas.reload()  # quotas are in force from the first request
        self.ctx = open_context(s, store, me, await store.cluster_id(), quotas=quotas, metrics=self.metrics)
        self.ctx.memory.saw(await store.memories())  # appends are held to the mark from the first one
        if s.authorizer:  # the ACLs are read before the first client is served, then kept fresh
            await self.ctx.access.authorizer.refresh()
        self.tenants = Tenants(self.ctx, self._start_upkeep)
        self.dispatch = dispatcher(self.ctx, self.tenants.context)
        if self.metrics is not None:
            self.dispatch = self.metrics.instrument(self.dispatch)
        registering = time.monotonic()
        await store.heartbeat(me, s.session_ms)
        self.ctx.groups.registered(registering, s.session_ms / 1000)
        self._start_upkeep(self.ctx)
        await self.tenants.refresh()
        self._tasks = [
            asyncio.create_task(self.ctx.memory.watch(store.memories)),
            asyncio.create_task(self._heartbeat()),
            asyncio.create_task(self._refresh_tenants()),
            asyncio.create_task(self._listen_for_quota_changes()),
            asyncio.create_task(quotas.keep_loaded()),
        ]
        # Everything loaded so far (the protocol's message classes above all) lives as long as the
        # broker: keep it out of the garbage collector's scans, which the hot paths trigger often.
        # Collect first, so garbage is not frozen with it: in a process that made other objects before
        # (an embedding application, the tests) a frozen cycle would never be freed, and a Kafka client
        # caught in one would go on reconnecting to wherever it pointed.
        gc.collect()
        gc.freeze()
        # A produce batch that aiokafka decodes (any batch the compiled reader of protocol/_produce.c
        # leaves to it) makes two tracked objects per record, its record and its headers list, that
        # live while the batch is in flight. At the default 700 allocations a collection ran many times
        # per batch, promoted the records and set off full collections: 0.45 us of the broker's 1.1 us
        # per record. Collected every GC_YOUNG_THRESHOLD allocations, most are gone.
        gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        self._serve_metrics()
        first_tls = tls_contexts.get(listeners[0].protocol)
        self.registry_server = open_registry_server(s, self.ctx, self.tenants.context, first_tls)
        if self.registry_server is not None:
            if self.metrics is not None:
                requests = self.metrics.schema_registry_requests
                self.registry_server.app.observers.append(
                    lambda route, status: requests.labels(route, str(status)).inc()
                )
            self.registry_server.start()
            log.info("schema registry at %s://%s:%d", "https" if first_tls else "http",
                     s.schema_registry_host or listeners[0].host, self.registry_server.port)  # fmt: skip
        for server in self.servers.values():
            await server.start_serving()
        for listener in listeners:
            log.info(
                "broker %d serving %s on %s:%d (advertised %s:%d)",
                broker_id,
                listener.protocol,
                listener.host,
                self.port_of(listener.protocol),
                *s.advertised_for(listener, self.port_of(listener.protocol)),
            )

    # -- metrics ------------------------------------------------------------------------------------
    def _serve_metrics(self) -> None:
        address = self.settings.metrics_address
        if self.metrics is None or address is None:
            return
        loop = asyncio.get_running_loop()
        self.metrics.registry.register(ScrapeGauges(loop, lambda: snapshot(self)))
        if self.ctx is not None:
            memory = self.ctx.memory
            self.metrics.redis_memory_fill.set_function(lambda: memory.fill)
            self.metrics.redis_memory_high_water.set(memory.high_water)
            self.metrics.redis_memory_throttle_from.set(memory.throttle_from)
        self.metrics_server = MetricsServer(self.metrics.registry, *address)
        log.info("metrics at http://%s:%d/metrics", address[0], self.metrics_server.port)

    @property
    def contexts(self) -> list[BrokerContext]:
        """The deployment's context and every tenant's made so far (for the metrics' gauges)."""
        return self.tenants.contexts if self.tenants else [self.ctx] if self.ctx else []

    @property
    def listener_names(self) -> list[str]:
        return list(self.servers)

    def _start_upkeep(self, ctx: BrokerContext) -> None:
        """Starts the duties of one keyspace (the deployment's, or a tenant's when first seen)."""
        if self._stopping or ctx.tenant in self.upkeeps:
            return
        upkeep = self.upkeeps[ctx.tenant] = Upkeep(ctx, lambda: self._stopping)
        upkeep.start()

    async def serve_forever(self) -> None:
        assert self._server is not None
        await self._server.serve_forever()

    async def stop(self, graceful: bool = False) -> None:
        """Stops serving. Graceful (SIGTERM): other brokers take this one's groups and partitions at
        once, and requests already read are answered (acks included) before connections close."""
        self._stopping = True
        for server in self.servers.values():
            server.close()  # no new connections
        if self.metrics_server is not None:
            await self.metrics_server.stop()
        if self.registry_server is not None:
            await self.registry_server.stop()
        # The heartbeat would register this broker again; the listeners stay up while draining, so
        # that long-polls in flight are still woken by new records, and topics stay fresh.
        for task in self._tasks:
            task.cancel()
        upkeeps = list(self.upkeeps.values())
        for upkeep in upkeeps:
            upkeep.stop_duties()
        contexts = self.contexts
        if self.ctx is not None:
            self.ctx.cluster.leaving = True  # the tenants' contexts share the deployment's view
            with contextlib.suppress(StorageError, OSError):
                await asyncio.wait_for(
                    self.ctx.store.unregister(self.ctx.me.broker_id),
                    STOP_GRACE_SECONDS,
                )
        for ctx in contexts:
            if hasattr(ctx, "groups"):
                ctx.groups.shutdown()
        if self.ctx is not None:
            self.ctx.access.quotas.close()
        if graceful:
            await self._drain_connections(self.settings.shutdown_timeout_ms / 1000)
        for upkeep in upkeeps:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(upkeep.release_archiving(), STOP_GRACE_SECONDS)
            await upkeep.stop_listening()
        for conn in list(self._connections):
            conn.cancel()
        pending = [*self._tasks, *(t for u in upkeeps for t in u.tasks), *self._connections]
        # Bounded: a client library's read may absorb a cancel (Python 3.11's wait_for, inside redis-py,
        # drops one that lands as its wait ends), so what is still running is cancelled again, and
        # stopping never hangs on it.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STOP_GRACE_SECONDS
        while pending and (left := deadline - loop.time()) > 0:
            _, running = await asyncio.wait(pending, timeout=min(left, RECANCEL_SECONDS))
            for task in running:
                task.cancel()
            pending = list(running)
        for ctx in contexts:  # cold store threads: a delta-rs call in flight ends first
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.to_thread(ctx.tiering.close), STOP_GRACE_SECONDS)
        if self.ctx:  # tenants' stores share this client and lane
            with contextlib.suppress(StorageError, OSError):
                await asyncio.wait_for(self.ctx.store.close_lanes(), STOP_GRACE_SECONDS)
            with contextlib.suppress(StorageError, OSError):
                await asyncio.wait_for(self.ctx.store.redis.aclose(), STOP_GRACE_SECONDS)

    async def _drain_connections(self, timeout: float) -> None:
        """Each connection stops reading, answers what it has read, and closes (bounded by timeout)."""
        await self._clients.drain(timeout)

    async def _on_client(
        self, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        assert self.dispatch is not None
        await self._clients.serve(reader, writer, self.dispatch, listener)

    async def _heartbeat(self) -> None:
        assert self.ctx is not None
        while True:
            await asyncio.sleep(self.settings.heartbeat_ms / 1000)
            health = self.ctx.health  # this round trip is also the groups' Redis probe
            was_in_trouble = health.in_trouble()
            health.probing()
            started = time.monotonic()
            try:
                await self.ctx.store.heartbeat(self.ctx.me, self.settings.session_ms)
            except (StorageError, OSError) as exc:
                if not was_in_trouble:  # once per outage, not every heartbeat
                    log.warning("heartbeat failed, Redis out of reach: %s", exc)
                health.failed()
            else:
                # The others count this broker live until the registration lapses; every context's
                # groups learn it (one registration serves the tenants too).
                for ctx in self.contexts:
                    ctx.groups.registered(started, self.settings.session_ms / 1000)
                back_at = health.back_at
                health.reached()
                if health.back_at != back_at:  # after a failure, or a round trip that took too long
                    log.warning("Redis reachable again; member sessions count from now")

    async def _listen_for_quota_changes(self) -> None:
        """Reloads the client quotas when any broker changes them (and after each (re)subscription, since
        changes made while not subscribed went unheard). Quotas are the deployment's: one channel."""
        assert self.ctx is not None
        quotas = self.ctx.access.quotas
        redis = self.ctx.store.redis
        await self.upkeeps[None].listen(
            "quota notices",
            lambda quiet: QuotaNotices(redis, quotas.base, quiet),
            quotas.changed,
            lambda heard: quotas.changed() if heard else None,
        )

    async def _refresh_tenants(self) -> None:
        """Finds tenants made since (their users may connect to other brokers only), so this broker
        runs their duties too."""
        assert self.tenants is not None
        while True:
            await asyncio.sleep(REFRESH_SECONDS)
            try:
                await self.tenants.refresh()
            except (StorageError, OSError) as exc:
                log.warning("reading tenants failed: %s", exc)


class StartupRefused(RuntimeError):
    """The broker will not serve on this Redis; the message says why and what to change."""


async def _check_eviction(store: Store, allowed: bool) -> None:
    mem = await store.memory()
    if not mem.may_evict:
        return
    why = (
        f"Redis maxmemory-policy is {mem.policy}: when memory is full Redis would evict keys and so "
        "silently lose records, leases and registrations"
    )
    if not allowed:
        await store.close()
        raise StartupRefused(
            f"{why}. Set maxmemory-policy noeviction (producers then get a retriable error when memory "
            "is full), or set allow_evicting_redis = true to start anyway."
        )
    log.warning("%s (allow_evicting_redis is set)", why)

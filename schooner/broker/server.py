"""The broker process: registers in Redis, serves Kafka clients, and keeps background duties running."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import math
import time
from collections.abc import Callable
from typing import Any

from ..config import Listener, Settings
from ..coordinators.group_configs import GroupConfigs
from ..coordinators.group_coordinator import GroupCoordinator, GroupSettings
from ..coordinators.transaction_coordinator import TransactionCoordinator
from ..storage.cluster import BrokerInfo
from ..storage.keys import Keyspace
from ..storage.log.notices import AppendNotices, ShardedAppendNotices
from ..storage.quotas import QuotaNotices
from ..storage.redis import client as redis_client
from ..storage.redis.calls import StorageError, mark_topology_stale
from ..storage.store import Store, open_lane
from ..storage.topic_partition import TopicPartition
from ..storage.topics.notices import ChannelNotices, TopicNotices
from .compactor import compact_partition
from .context import BrokerContext
from .dispatch import dispatcher
from .limits import ConnectionStats
from .listener import ClientConnections
from .quotas import ClientQuotas
from .session import Session
from .tls import TlsSetupError, certificate_principals, handshake_timeout, server_contexts

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 3.0
SHARDED_RETRY_SECONDS = 0.5  # after the sharded append notices failed, they start over after this


class Broker:
    def __init__(self, settings: Settings, redis_url: str) -> None:
        self.settings = settings
        self.redis_url = redis_url
        self.ctx: BrokerContext | None = None
        self._server: asyncio.Server | None = None  # the first listener's
        self.servers: dict[str, asyncio.Server] = {}  # listener protocol -> its server
        self._tasks: list[asyncio.Task[Any]] = []
        self._clients = ClientConnections(settings)
        self._connections = self._clients.tasks  # one task per open client connection
        self._subscriptions: set[ChannelNotices | ShardedAppendNotices] = set()  # closed by stop()
        # On a Redis Cluster: the sharded subscriptions to the partitions local fetches wait on.
        self.sharded_notices: ShardedAppendNotices | None = None
        self._listeners: list[asyncio.Task[None]] = []
        self._stopping = False

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

    async def start(self) -> None:
        s = self.settings
        listeners = s.listeners_in_force()
        try:
            tls_contexts = server_contexts(s, listeners)
            tls_timeout = handshake_timeout(s) if tls_contexts else None
        except TlsSetupError as exc:
            raise StartupRefused(str(exc)) from None
        if tls_contexts:
            self._clients.certificate_principal = certificate_principals(s)
        redis = redis_client.connect(self.redis_url, s.redis_timeout_ms, health_check_interval=10)
        store = Store(redis, Keyspace(s.keyspace), open_lane(redis, s.redis_timeout_ms), s.acks_all_fsync)
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
        self.ctx = BrokerContext(settings=s, store=store, me=me)
        self.ctx.groups = GroupCoordinator(
            store,
            me,
            self.ctx.live_brokers,
            GroupSettings(s.group_min_session_ms, s.group_max_session_ms, s.group_initial_rebalance_delay_ms),
        )
        self.ctx.transactions = TransactionCoordinator(
            store,
            me,
            self.ctx.live_brokers,
            self.ctx.topic,
            s.transaction_max_timeout_ms,
            s.transactional_id_expiration_ms,
        )
        self.ctx.group_configs = GroupConfigs(store, s)
        self.ctx.quotas = ClientQuotas(s, store)
        await self.ctx.quotas.reload()  # quotas are in force from the first request
        self.ctx.cluster_id = await store.cluster_id()
        await store.heartbeat(me, s.session_ms)
        if redis_client.is_cluster(redis):
            self.sharded_notices = ShardedAppendNotices(redis, store.ks, s.redis_timeout_ms / 1000)
            self.ctx.waiters.watch(self.sharded_notices.want, self.sharded_notices.idle)
        self._listeners = [
            asyncio.create_task(self._listen_for_appends()),
            asyncio.create_task(self._listen_for_topic_changes()),
            asyncio.create_task(self._listen_for_quota_changes()),
        ]
        self._tasks = [
            asyncio.create_task(self._heartbeat()),
            *self._listeners,
            asyncio.create_task(self._sweep_retention()),
            asyncio.create_task(self._watch_groups()),
            asyncio.create_task(self._sweep_transactions()),
            asyncio.create_task(self.ctx.quotas.keep_loaded()),
        ]
        # Everything loaded so far (the protocol's message classes above all) lives as long as the
        # broker: keep it out of the garbage collector's scans, which the hot paths trigger often.
        gc.freeze()
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

    async def serve_forever(self) -> None:
        assert self._server is not None
        await self._server.serve_forever()

    async def stop(self, graceful: bool = False) -> None:
        """Stops serving. Graceful (SIGTERM): other brokers take this one's groups and partitions at
        once, and requests already read are answered (acks included) before connections close."""
        self._stopping = True
        for server in self.servers.values():
            server.close()  # no new connections
        # The heartbeat would register this broker again; the listeners stay up while draining, so
        # that long-polls in flight are still woken by new records, and topics stay fresh.
        for task in self._tasks:
            if task not in self._listeners:
                task.cancel()
        if self.ctx is not None:
            self.ctx.leaving = True
            with contextlib.suppress(StorageError, OSError):
                await asyncio.wait_for(
                    self.ctx.store.unregister(self.ctx.me.broker_id),
                    STOP_GRACE_SECONDS,
                )
            if hasattr(self.ctx, "groups"):
                self.ctx.groups.shutdown()
            if hasattr(self.ctx, "quotas"):
                self.ctx.quotas.close()
        if graceful:
            await self._drain_connections(self.settings.shutdown_timeout_ms / 1000)
        for subscription in list(self._subscriptions):
            with contextlib.suppress(Exception):
                await subscription.close()
        for task in self._listeners:
            task.cancel()
        for conn in list(self._connections):
            conn.cancel()
        pending = [*self._tasks, *self._connections]
        if pending:
            # Bounded: a client library's read may absorb a cancel; stopping must not hang on it.
            await asyncio.wait(pending, timeout=STOP_GRACE_SECONDS)
        if self.ctx:
            with contextlib.suppress(StorageError, OSError):
                await asyncio.wait_for(self.ctx.store.lane.close(), STOP_GRACE_SECONDS)
            with contextlib.suppress(StorageError, OSError):
                await asyncio.wait_for(self.ctx.store.redis.aclose(), STOP_GRACE_SECONDS)

    async def _drain_connections(self, timeout: float) -> None:
        """Each connection stops reading, answers what it has read, and closes (bounded by timeout)."""
        await self._clients.drain(timeout)

    async def _on_client(
        self, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        assert self.ctx is not None
        await self._clients.serve(reader, writer, dispatcher(self.ctx), listener)

    async def _heartbeat(self) -> None:
        assert self.ctx is not None
        while True:
            await asyncio.sleep(self.settings.heartbeat_ms / 1000)
            health = self.ctx.groups.redis_health  # this round trip is also the groups' Redis probe
            was_in_trouble = health.in_trouble()
            health.probing()
            try:
                await self.ctx.store.heartbeat(self.ctx.me, self.settings.session_ms)
            except (StorageError, OSError) as exc:
                if not was_in_trouble:  # once per outage, not every heartbeat
                    log.warning("heartbeat failed, Redis out of reach: %s", exc)
                health.failed()
            else:
                back_at = health.back_at
                health.reached()
                if health.back_at != back_at:  # after a failure, or a round trip that took too long
                    log.warning("Redis reachable again; member sessions count from now")

    async def _listen_for_appends(self) -> None:
        """Wakes local long-polls when any broker (or this one) appends: on one Redis through the
        appended channel, on a Redis Cluster through the sharded channels of the partitions waited on."""
        assert self.ctx is not None
        ctx = self.ctx
        if self.sharded_notices is not None:
            await self._listen_sharded(self.sharded_notices)
            return
        await self._listen(
            "append notices",
            lambda quiet: AppendNotices(ctx.store.redis, ctx.ks, quiet),
            ctx.waiters.notify_text,
        )

    async def _listen_for_topic_changes(self) -> None:
        """Drops a cached topic when any broker (or a storage client) creates, changes or deletes it."""
        assert self.ctx is not None
        ctx = self.ctx
        await self._listen(
            "topic notices",
            lambda quiet: TopicNotices(ctx.store.redis, ctx.ks, quiet),
            lambda name: ctx.forget_topic(name.decode(errors="replace")),
            ctx.topic_notices,
        )

    async def _listen_for_quota_changes(self) -> None:
        """Reloads the client quotas when any broker changes them (and after each (re)subscription, since
        changes made while not subscribed went unheard)."""
        assert self.ctx is not None
        quotas = self.ctx.quotas
        redis = self.ctx.store.redis
        await self._listen(
            "quota notices",
            lambda quiet: QuotaNotices(redis, quotas.base, quiet),
            quotas.changed,
            lambda heard: quotas.changed() if heard else None,
        )

    async def _listen(
        self,
        what: str,
        subscribe: Callable[[float], ChannelNotices],
        on_notice: Callable[[bytes], None],
        on_heard: Callable[[bool], None] | None = None,
    ) -> None:
        """Subscribes and passes each notice on, subscribing anew on a new connection after a failure.

        A quiet channel is PINGed after redis_timeout_ms; no answer within as long again means the
        connection is dead (a stalled path shows no error). on_heard(True) follows each confirmed
        subscription, on_heard(False) each failure.
        """
        assert self.ctx is not None
        quiet = self.settings.redis_timeout_ms / 1000
        interrupted = False
        while not self._stopping:
            notices = subscribe(quiet)
            self._subscriptions.add(notices)
            try:
                await notices.subscribe()
                while True:
                    notice = await notices.next()
                    if notice is not None:
                        on_notice(notice)
                        continue
                    if on_heard is not None:
                        on_heard(True)
                    if interrupted:
                        interrupted = False
                        log.warning("%s resumed", what)
            except (StorageError, OSError, RuntimeError, AttributeError) as exc:
                if on_heard is not None:
                    on_heard(False)
                if self._stopping:  # stop() closed the connection under the read
                    return
                mark_topology_stale(self.ctx.store.redis)
                if not interrupted:  # once per outage; fetches poll meanwhile (fetch.POLL_SECONDS)
                    log.warning("%s interrupted: %s", what, exc)
                interrupted = True
                await asyncio.sleep(0.5)
            finally:
                self._subscriptions.discard(notices)
                with contextlib.suppress(Exception):
                    await notices.close()

    async def _listen_sharded(self, notices: ShardedAppendNotices) -> None:
        assert self.ctx is not None
        waiters = self.ctx.waiters

        def wake(tp: TopicPartition) -> None:
            waiters.notify(tp.topic, tp.partition)

        self._subscriptions.add(notices)
        failed_at = -math.inf
        while not self._stopping:
            started = time.monotonic()
            try:
                await notices.run(wake)
            except (StorageError, OSError, RuntimeError, AttributeError) as exc:
                if self._stopping:
                    return
                if started - failed_at > SHARDED_RETRY_SECONDS * 2:  # once per outage
                    log.warning("append notices interrupted: %s", exc)
                failed_at = time.monotonic()
                await asyncio.sleep(SHARDED_RETRY_SECONDS)

    async def _watch_groups(self) -> None:
        """Expires member sessions, and hands groups over when the live broker set changes."""
        assert self.ctx is not None
        groups = self.ctx.groups
        ticks = 0
        while True:
            await asyncio.sleep(0.25)
            ticks += 1
            try:
                await groups.expire_sessions()
                if ticks % 4 == 0:
                    await groups.check_ownership()
            except (StorageError, OSError) as exc:
                if not groups.redis_health.in_trouble():  # an outage is logged by the heartbeat
                    log.warning("group upkeep failed: %s", exc)

    async def _sweep_retention(self) -> None:
        """Applies retention to every partition, so topics that get no writes are trimmed too, forgets
        idempotent producers idle longer than producer_id_expiration_ms, and compacts compacted topics."""
        assert self.ctx is not None
        ctx = self.ctx
        expiration_ms = self.settings.producer_id_expiration_ms
        while True:
            await asyncio.sleep(self.settings.retention_check_ms / 1000)
            try:
                for topic in await ctx.store.topics(ctx.topic_defaults):
                    for p in range(topic.partitions):
                        await ctx.store.apply_retention(topic, p)
                        await ctx.store.expire_producers(topic, p, expiration_ms)
                        if topic.compacted:
                            await compact_partition(
                                ctx.store,
                                topic,
                                p,
                                self.settings.compaction_step_entries,
                                self.settings.compaction_max_steps,
                            )
            except (StorageError, OSError) as exc:
                log.warning("retention sweep failed: %s", exc)

    async def _sweep_transactions(self) -> None:
        """Aborts timed-out transactions and completes ends a dead broker left (for the transactional
        ids this broker coordinates), and forgets idle ids."""
        assert self.ctx is not None
        while True:
            await asyncio.sleep(self.settings.transaction_check_ms / 1000)
            try:
                await self.ctx.transactions.sweep()
            except (StorageError, OSError) as exc:
                log.warning("transaction sweep failed: %s", exc)


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

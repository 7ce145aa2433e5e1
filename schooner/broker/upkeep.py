"""What a broker keeps running for one keyspace: the deployment's, and each tenant's (broker/tenants.py).

- wake-ups of long-polling fetches when any broker appends (the appended channel on one Redis, the
  partitions' sharded channels on a Redis Cluster), and the look at the partitions they wait on that
  finds other appends (waiters.py);
- topic change notices, which drop cached topics;
- the retention pass, and the idle-producer expiry and compaction sweep;
- the archiver of tiered topics (tiering/archiver.py), every archive_interval_ms;
- group upkeep (member sessions, which broker owns which group);
- transaction sweeps (timeouts, ends a dead broker left).
The broker's own registration (heartbeat) is not here: a broker registers once, in the deployment's
keyspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any

from ..storage.log.notices import AppendNotices, ShardedAppendNotices
from ..storage.redis import client as redis_client
from ..storage.redis.calls import StorageError, mark_topology_stale
from ..storage.topic_partition import TopicPartition
from ..storage.topics.notices import ChannelNotices, TopicNotices
from .compactor import compact_partition
from .context import BrokerContext
from .partitions import waiters as waiters_module
from .tiering.archiver import Archiver

log = logging.getLogger(__name__)

SHARDED_RETRY_SECONDS = 0.5  # after the sharded append notices failed, they start over after this


class Upkeep:
    def __init__(self, ctx: BrokerContext, stopping: Callable[[], bool]) -> None:
        self.ctx = ctx
        self.settings = ctx.settings
        self._stopping = stopping
        # Whose duties these are, for the log: "" for the deployment, " of tenant x" for a tenant.
        self._whose = f" of tenant {ctx.tenant}" if ctx.tenant else ""
        self._subscriptions: set[ChannelNotices | ShardedAppendNotices] = set()  # closed by stop()
        # On a Redis Cluster: the sharded subscriptions to the partitions local fetches wait on.
        self.sharded_notices: ShardedAppendNotices | None = None
        self.listeners: list[asyncio.Task[None]] = []  # kept up while the broker drains
        self.tasks: list[asyncio.Task[Any]] = []  # every task, listeners included
        # Archives tiered topics when the broker has a cold store.
        self.archiver: Archiver | None = (
            Archiver(
                ctx.tiering,
                ctx.settings,
                ctx.me,
                ctx.cluster.live_brokers,
                self._whose,
                ctx.metrics,
                ctx.tenant,
                ctx.memory,
            )
            if ctx.tiering.available
            else None
        )

    def start(self) -> None:
        ctx, s = self.ctx, self.settings
        if redis_client.is_cluster(ctx.store.redis):
            self.sharded_notices = ShardedAppendNotices(ctx.store.redis, ctx.ks, s.redis_timeout_ms / 1000)
            ctx.data.waiters.watch(self.sharded_notices.want, self.sharded_notices.idle)
        self.listeners = [
            asyncio.create_task(self._listen_for_appends()),
            asyncio.create_task(self._listen_for_topic_changes()),
            asyncio.create_task(self._look_at_waited_partitions()),
        ]
        if s.authorizer:  # this keyspace's ACLs: a change applies at once, not at the next version check
            self.listeners.append(asyncio.create_task(self._listen_for_acl_changes()))
        self.tasks = [
            *self.listeners,
            asyncio.create_task(self._apply_retention()),
            asyncio.create_task(self._sweep_partitions()),
            asyncio.create_task(self._watch_groups()),
            asyncio.create_task(self._sweep_transactions()),
            asyncio.create_task(self._archive()),
        ]

    def stop_duties(self) -> None:
        """Cancels all but the listeners: while draining, long-polls are still woken and topics fresh."""
        for task in self.tasks:
            if task not in self.listeners:
                task.cancel()

    async def release_archiving(self) -> None:
        """Gives the archiver's claims back, so that other brokers archive those partitions at once."""
        if self.archiver is not None:
            with contextlib.suppress(StorageError, OSError):
                await self.archiver.release_all(await self.ctx.store.topics(self.ctx.topic_defaults))

    async def stop_listening(self) -> None:
        for subscription in list(self._subscriptions):
            with contextlib.suppress(Exception):
                await subscription.close()
        for task in self.listeners:
            task.cancel()

    async def _listen_for_appends(self) -> None:
        """Wakes local long-polls when any broker (or this one) appends: on one Redis through the
        appended channel, on a Redis Cluster through the sharded channels of the partitions waited on."""
        ctx = self.ctx
        if self.sharded_notices is not None:
            await self._listen_sharded(self.sharded_notices)
            return
        await self.listen(
            "append notices",
            lambda quiet: AppendNotices(ctx.store.redis, ctx.ks, quiet),
            ctx.data.waiters.notify_text,
        )

    async def _look_at_waited_partitions(self) -> None:
        """Wakes fetches waiting on partitions that changed without a notice: one look at each waited
        partition's last entry ID per RECHECK_SECONDS, however many fetches wait on it (waiters.py)."""
        waiters = self.ctx.data.waiters
        while True:
            await asyncio.sleep(waiters_module.RECHECK_SECONDS)
            waited = waiters.waited()
            if not waited:
                continue
            try:
                tips = await self.ctx.store.tips(waited)
            except (StorageError, OSError):
                waiters.wake_all()
                continue
            waiters.saw_tips(waited, tips, time.monotonic())

    async def _listen_for_topic_changes(self) -> None:
        """Drops a cached topic when any broker (or a storage client) creates, changes or deletes it."""
        ctx = self.ctx
        await self.listen(
            "topic notices",
            lambda quiet: TopicNotices(ctx.store.redis, ctx.ks, quiet),
            lambda name: ctx.topics.forget(name.decode(errors="replace")),
            ctx.topics.notices,
        )

    async def _listen_for_acl_changes(self) -> None:
        """Reloads the keyspace's ACLs when any broker changes them (and after each (re)subscription,
        since changes made while unsubscribed went unheard)."""
        ctx = self.ctx
        await self.listen(
            "ACL notices",
            lambda quiet: ChannelNotices(ctx.store.redis, ctx.ks.acls_channel, quiet),
            lambda _version: ctx.access.authorizer.notice(),
            # Subscribed (again): changes made meanwhile went unheard, so load now; lost: load before
            # the next decision.
            lambda heard: ctx.access.authorizer.notice() if heard else ctx.access.authorizer.changed(),
        )

    async def listen(
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
        what += self._whose
        quiet = self.settings.redis_timeout_ms / 1000
        interrupted = False
        while not self._stopping():
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
                if self._stopping():  # stop() closed the connection under the read
                    return
                mark_topology_stale(self.ctx.store.redis)
                if not interrupted:  # once per outage; _look_at_waited_partitions wakes fetches meanwhile
                    log.warning("%s interrupted: %s", what, exc)
                interrupted = True
                await asyncio.sleep(0.5)
            finally:
                self._subscriptions.discard(notices)
                with contextlib.suppress(Exception):
                    await notices.close()

    async def _listen_sharded(self, notices: ShardedAppendNotices) -> None:
        waiters = self.ctx.data.waiters

        def wake(tp: TopicPartition) -> None:
            waiters.notify(tp.topic, tp.partition)

        self._subscriptions.add(notices)
        failed_at = -math.inf
        while not self._stopping():
            started = time.monotonic()
            try:
                await notices.run(wake)
            except (StorageError, OSError, RuntimeError, AttributeError) as exc:
                if self._stopping():
                    return
                if started - failed_at > SHARDED_RETRY_SECONDS * 2:  # once per outage
                    log.warning("append notices%s interrupted: %s", self._whose, exc)
                failed_at = time.monotonic()
                await asyncio.sleep(SHARDED_RETRY_SECONDS)

    async def _watch_groups(self) -> None:
        """Expires member sessions, and hands groups over when the live broker set changes."""
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
                if not self.ctx.health.in_trouble():  # an outage is logged by the heartbeat
                    log.warning("group upkeep%s failed: %s", self._whose, exc)

    async def _apply_retention(self) -> None:
        """The retention pass, every log_retention_check_interval_ms as Kafka's: retention.ms and
        retention.bytes on every partition. Appends do not apply retention.ms, so this is what removes
        old records, whether or not the topic gets writes."""
        ctx = self.ctx
        while True:
            await asyncio.sleep(max(self.settings.log_retention_check_interval_ms, 1) / 1000)
            try:
                for topic in await ctx.store.topics(ctx.topic_defaults):
                    for p in range(topic.partitions):
                        await ctx.store.apply_retention(topic, p)
            except (StorageError, OSError) as exc:
                log.warning("retention pass%s failed: %s", self._whose, exc)

    async def _archive(self) -> None:
        """The archiver's pass over tiered topics, every archive_interval_ms (tiering/archiver.py), or
        one after the other while Redis fills up (a broker started on a Redis over its limit archives
        first). Without a cold store a tiered topic (made on a broker that has one) keeps all in
        Redis."""
        ctx, archiver = self.ctx, self.archiver
        warned: set[str] = set()
        while True:
            if archiver is not None:
                await archiver.next_pass()
            else:
                await asyncio.sleep(max(self.settings.archive_interval_ms, 1) / 1000)
            try:
                topics = await ctx.store.topics(ctx.topic_defaults)
                if archiver is not None:
                    await archiver.run_pass(topics)
                    continue
                for topic in topics:
                    if topic.remote_storage and topic.name not in warned:
                        warned.add(topic.name)
                        log.warning(
                            "topic %s%s has remote.storage.enable but this broker has no cold store "
                            "(cold_store_url): it is not archived here",
                            topic.name, self._whose,
                        )  # fmt: skip
            except (StorageError, OSError) as exc:
                log.warning("archiver%s failed: %s", self._whose, exc)

    async def _sweep_partitions(self) -> None:
        """Forgets idempotent producers idle longer than producer_id_expiration_ms, and compacts
        compacted topics, every retention_check_ms."""
        ctx, s = self.ctx, self.settings
        while True:
            await asyncio.sleep(s.retention_check_ms / 1000)
            try:
                for topic in await ctx.store.topics(ctx.topic_defaults):
                    for p in range(topic.partitions):
                        await ctx.store.expire_producers(topic, p, s.producer_id_expiration_ms)
                        if topic.compacted:
                            await compact_partition(
                                ctx.store, topic, p, s.compaction_step_entries, s.compaction_max_steps
                            )
            except (StorageError, OSError) as exc:
                log.warning("partition sweep%s failed: %s", self._whose, exc)

    async def _sweep_transactions(self) -> None:
        """Aborts timed-out transactions and completes ends a dead broker left (for the transactional
        ids this broker coordinates), and forgets idle ids."""
        while True:
            await asyncio.sleep(self.settings.transaction_check_ms / 1000)
            try:
                await self.ctx.transactions.sweep()
            except (StorageError, OSError) as exc:
                log.warning("transaction sweep%s failed: %s", self._whose, exc)

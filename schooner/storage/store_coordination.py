"""The part of Store's list of round trips that the coordinators and the security make: share groups,
group configs, the transaction coordinator's state, ACLs, SCRAM users and tenants. Store (store.py)
inherits it; it runs on Store's client and keyspace."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from .groups import configs
from .keys import Keyspace
from .log.acks import AcksAll, NotDurable
from .redis.calls import Call, Redis, Steps, drive, run, together
from .redis.server_info import ACKS_ALL_TIMEOUT_MS
from .security import acls as acl_store
from .security import users as user_store
from .security.acls import AclBinding, AclSet
from .security.users import User
from .share import partition as share
from .topics.metadata import Topic
from .transactions import state as txn_state
from .transactions.state import Stored, TransactionState

T = TypeVar("T")


class CoordinationCalls:
    redis: Redis
    ks: Keyspace
    acks_all: AcksAll

    async def run(self, call: Call[T]) -> T:
        return await run(self.redis, call)

    async def drive(self, steps: Steps[T]) -> T:
        return await drive(self.redis, steps)

    async def durable(self, keys: Iterable[str]) -> None:
        """After a write a client is told is done (an acknowledgement, a commit, a transaction's end):
        it waits as acks=all does, for the replicas and, with acks_all_fsync, the AOF. Kafka answers
        these after its internal topics' acks=all; without the wait, a Redis crash just after the
        answer could undo it (a chaos run saw a share record accepted twice). Nothing to wait for
        costs no round trip. Raises NotDurable when they do not confirm in time."""
        if not await self.acks_all.wait_keys(keys, ACKS_ALL_TIMEOUT_MS):
            raise NotDurable("the write's replicas or AOF did not confirm it in time")

    # -- share groups (KIP-932) ---------------------------------------------------------------------
    async def share_acquire(
        self,
        partitions: Sequence[tuple[Topic, int]],
        group: str,
        member: str,
        max_records: int,
        limits: share.Limits,
        starts: Sequence[str | int],
    ) -> list[share.Acquired]:
        """Acquires on every partition in one pipelined round trip (starts: one per partition, where
        a share partition made now begins, see share.acquire)."""
        calls = [
            share.acquire(self.ks, t, p, group, member, max_records, limits, start)
            for (t, p), start in zip(partitions, starts, strict=True)
        ]
        return await self.drive(together(calls))

    async def share_acknowledge(
        self, items: Sequence[tuple[Topic, int, Sequence[share.AckBatch]]], group: str, member: str,
        limits: share.Limits,
    ) -> list[share.Acknowledged]:  # fmt: skip
        calls = [share.acknowledge(self.ks, t, p, group, member, b, limits) for t, p, b in items]
        done = await self.drive(together(calls))
        await self.durable(self.ks.share_partition(t.name, p, group) for t, p, _ in items)
        return done

    async def share_states(
        self, partitions: Sequence[tuple[Topic, int]], group: str
    ) -> list[share.ShareState | None]:
        return await self.drive(together([share.state(self.ks, t, p, group) for t, p in partitions]))

    async def share_reset(
        self, partitions: Sequence[tuple[Topic, int]], group: str, start_offsets: Sequence[int | None]
    ) -> list[int]:
        """Starts each share partition over at its offset, or deletes it where the offset is None."""
        calls = [
            share.reset(self.ks, t, p, group, o) for (t, p), o in zip(partitions, start_offsets, strict=True)
        ]
        return await self.drive(together(calls))

    async def share_release_member(
        self, partitions: Sequence[tuple[Topic, int]], group: str, member: str
    ) -> int:
        calls = [share.release_member(self.ks, t, p, group, member) for t, p in partitions]
        return sum(await self.drive(together(calls)))

    async def share_register_topics(self, group: str, topics: Sequence[str]) -> None:
        await self.run(share.register_topics(self.ks, group, topics))

    async def share_unregister_topics(self, group: str, topics: Sequence[str]) -> None:
        await self.run(share.unregister_topics(self.ks, group, topics))

    async def share_topics(self, group: str) -> list[str]:
        return await self.run(share.topics(self.ks, group))

    async def share_forget_group(self, group: str) -> None:
        await self.run(share.forget_group(self.ks, group))

    # -- group configs (the GROUP config resource) --------------------------------------------------
    async def group_configs(self, group_id: str) -> dict[str, str]:
        return await self.run(configs.get(self.ks, group_id))

    async def alter_group_configs(
        self,
        group_id: str,
        set_configs: Mapping[str, str],
        delete_configs: Iterable[str] = (),
        replace: bool = False,
        expected: Mapping[str, str] | None = None,
    ) -> bool:
        """False (nothing written) when expected is given and the stored overrides differ from it."""
        call = configs.alter(self.ks, group_id, set_configs, delete_configs, replace, expected)
        return await self.run(call)

    async def delete_group_configs(self, group_id: str) -> bool:
        """Drops the group's configs; DeleteGroups leaves them, as Kafka does, unless it calls this."""
        return await self.run(configs.delete_all(self.ks, group_id))

    # -- the transaction coordinator's state --------------------------------------------------------
    async def transaction(self, transactional_id: str) -> Stored:
        return await self.run(txn_state.load(self.ks, transactional_id))

    async def save_transaction(
        self, transactional_id: str, version: int, state: TransactionState | None
    ) -> int:
        """The new version; 0 (nothing written) when another broker changed it since `version`."""
        return await self.drive(txn_state.save(self.ks, transactional_id, version, state))

    async def transaction_durable(
        self, transactional_id: str, partitions: Iterable[tuple[Topic, int]], groups: Iterable[str]
    ) -> None:
        """After a transaction's end: its state, its markers and its groups' offsets, durable."""
        keys = [self.ks.transaction(transactional_id)]
        keys += [self.ks.stream(t.name, p) for t, p in partitions]
        keys += [self.ks.group_offsets(g) for g in groups]
        await self.durable(keys)

    async def transactional_ids(self, changed_before_ms: float = float("inf")) -> list[str]:
        return await self.run(txn_state.ids(self.ks, changed_before_ms))

    # -- ACLs ---------------------------------------------------------------------------------------
    async def acls(self) -> tuple[int, AclSet]:
        """The bindings and their version."""
        return await self.drive(acl_store.load(self.ks))

    async def acls_version(self) -> int:
        return await self.run(acl_store.version(self.ks))

    async def add_acls(self, bindings: Iterable[AclBinding]) -> tuple[int, int, int]:
        return await self.run(acl_store.add(self.ks, bindings))

    async def remove_acls(self, bindings: Iterable[AclBinding]) -> tuple[int, int, int]:
        return await self.run(acl_store.remove(self.ks, bindings))

    # -- SCRAM users and tenants: deployment-wide, so under the base keyspace the caller names ------
    async def user(self, base: Keyspace, name: str) -> User | None:
        return await self.run(user_store.get_user(base, name))

    async def users(self, base: Keyspace, names: Sequence[str]) -> list[User | None]:
        """Each named user (None where there is none), in one round trip."""
        return await self.drive(together([user_store.get_user(base, n) for n in names]))

    async def all_users(self, base: Keyspace) -> list[User]:
        return await self.run(user_store.all_users(base))

    async def tenants(self, base: Keyspace) -> list[str]:
        """The tenants the users name."""
        return await self.drive(user_store.tenants(base))

"""The Store's own logic beyond single round trips (an append that finds its partition unstamped), and
the methods that stand for the round trips the coordinators and handlers once ran around it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from schooner.security.acls import AclBinding, AclOperation, PatternType, PermissionType, ResourceType
from schooner.storage.keys import Keyspace
from schooner.storage.log.append import APPENDED, UNKNOWN_PARTITION, RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.redis import client
from schooner.storage.security.users import User, put_user
from schooner.storage.store import Store
from schooner.storage.transactions.state import Stored, TransactionState

READ = AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                  PermissionType.ALLOW)  # fmt: skip


def test_an_unstamped_partition_is_stamped_and_the_append_retried(redis_server: Any, keyspace: str) -> None:
    """A create interrupted after registering the topic, before stamping: the first append repairs it.
    A topic deleted meanwhile stays refused."""

    async def body() -> None:
        store = Store(client.connect(redis_server.url), Keyspace(keyspace))
        try:
            topic = await store.create_topic("t", 2, {}, {})
            await store.redis.hdel(store.ks.partition_state("t", 1), "topic_id")  # as if never stamped
            batch = RecordBatch([Record(int(time.time() * 1000), b"k", b"v")])
            result = await store.append(topic, 1, batch)
            assert result.status == APPENDED
            assert await store.redis.xlen(store.ks.stream("t", 1)) == 1
            assert (
                await store.redis.hget(store.ks.partition_state("t", 1), "topic_id") == str(topic.id).encode()
            )
            await store.delete_topic("t", topic.id)
            assert (await store.append(topic, 0, batch)).status == UNKNOWN_PARTITION
            assert not await store.redis.exists(store.ks.stream("t", 0))
        finally:
            await store.close()

    asyncio.run(body())


def test_transaction_state_acls_users_and_tenants_are_store_methods(redis_server: Any, keyspace: str) -> None:
    """The round trips the transaction coordinator, the authorizer and the SCRAM handlers make."""

    async def body() -> None:
        store = Store(client.connect(redis_server.url), Keyspace(keyspace))
        try:
            assert (await store.transaction("tx")).state is None
            saved = TransactionState(7, 0, 60_000)
            version = await store.save_transaction("tx", 0, saved)
            assert version and await store.transaction("tx") == Stored(version, saved)
            assert await store.transactional_ids() == ["tx"]
            assert await store.transactional_ids(0) == []
            # Refused saves (not the stored version) leave the index as what is stored says.
            assert await store.save_transaction("tx", 0, None) == 0
            assert await store.transactional_ids() == ["tx"]
            assert await store.save_transaction("tx", 0, saved.changed(state="Ongoing")) == 0
            assert await store.transactional_ids(saved.updated_ms) == ["tx"]

            assert await store.acls_version() == 0
            assert await store.add_acls([READ]) == (1, 1, 0)
            version, found = await store.acls()
            assert version == 1 and list(found) == [READ]
            assert (await store.remove_acls([READ]))[2] == 1

            base = store.ks
            await store.run(put_user(base, User("alice", tenant="acme")))
            assert await store.user(base, "alice") == User("alice", tenant="acme")
            assert await store.users(base, ["alice", "bob"]) == [User("alice", tenant="acme"), None]
            assert [u.name for u in await store.all_users(base)] == ["alice"]
            assert await store.tenants(base) == ["acme"]
        finally:
            await store.close()

    asyncio.run(body())

"""ACL bindings in Redis (storage/security/acls.py): the encoding, the alter script's counts and version, its
change notice, and a keyspace's bindings staying apart from another's, on a real redis-server."""

from __future__ import annotations

import time
from typing import Any

from schooner.security.acls import AclBinding, AclOperation, PatternType, PermissionType, ResourceType
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync
from schooner.storage.security import acls
from tests.conftest import redis_for

READ = AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                  PermissionType.ALLOW)  # fmt: skip
ODD = AclBinding(ResourceType.GROUP, 'ü "quoted" [x]', PatternType.PREFIXED, "User:*", "10.0.0.1",
                 AclOperation.ALL, PermissionType.DENY)  # fmt: skip


def test_bindings_round_trip_through_their_encoding() -> None:
    for b in (READ, ODD):
        assert acls.decode_binding(acls.encode_binding(b)) == b
    assert acls.encode_binding(READ) == '[2,3,"orders","User:alice","*",3,3]'
    assert acls.decode_binding("not json") is None
    assert acls.decode_binding('[2,3,"x","User:a","*",99,3]') is None  # an operation this build lacks


def test_add_and_remove_count_changes_and_bump_the_version_only_then(
    redis_server: Any, keyspace: str
) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    assert run_sync(redis, acls.version(ks)) == 0
    assert run_sync(redis, acls.add(ks, [READ, ODD])) == (1, 2, 0)
    assert run_sync(redis, acls.add(ks, [READ])) == (1, 0, 0)  # already there: no change, no new version
    version, found = drive_sync(redis, acls.load(ks))
    assert version == 1 and set(found) == {READ, ODD}
    assert run_sync(redis, acls.remove(ks, [READ])) == (2, 0, 1)
    assert run_sync(redis, acls.remove(ks, [READ])) == (2, 0, 0)
    version, found = drive_sync(redis, acls.load(ks))
    assert version == 2 and set(found) == {ODD}


def test_a_member_this_build_cannot_read_is_skipped(redis_server: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    plain = redis_for(redis_server.url)
    plain.sadd(ks.acl_bindings, "garbage", acls.encode_binding(READ))
    _, found = drive_sync(client.connect_sync(redis_server.url), acls.load(ks))
    assert set(found) == {READ}


def test_every_change_publishes_the_new_version(redis_server: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    pubsub = redis_for(redis_server.url).pubsub()
    pubsub.subscribe(ks.acls_channel)
    redis = client.connect_sync(redis_server.url)
    run_sync(redis, acls.add(ks, [READ]))
    run_sync(redis, acls.add(ks, [READ]))  # no change: no notice
    run_sync(redis, acls.remove(ks, [READ]))
    heard: list[bytes] = []
    deadline = time.monotonic() + 10
    while len(heard) < 2 and time.monotonic() < deadline:
        message = pubsub.get_message(timeout=0.5)
        if message and message["type"] == "message":
            heard.append(message["data"])
    assert heard == [b"1", b"2"]
    assert pubsub.get_message(timeout=0.3) is None
    pubsub.close()


def test_keyspaces_keep_their_own_bindings(redis_server: Any, keyspace: str) -> None:
    base, tenant = Keyspace(keyspace), Keyspace(f"{keyspace}:tenant-a")
    redis = client.connect_sync(redis_server.url)
    run_sync(redis, acls.add(ks=tenant, bindings=[READ]))
    assert drive_sync(redis, acls.load(base)) == (0, acls.AclSet())
    assert set(drive_sync(redis, acls.load(tenant))[1]) == {READ}

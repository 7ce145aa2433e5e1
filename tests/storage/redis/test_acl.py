"""The Redis ACL user of docs/security.md is the one storage/redis/acl.py builds, and it reaches its own
keyspace only."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from schooner.storage.keys import Keyspace
from schooner.storage.redis.acl import acl_setuser
from tests.conftest import redis_for

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_the_documented_acl_line_is_the_codes() -> None:
    line = " ".join(acl_setuser("schooner", "PASSWORD", "schooner"))
    assert line in (DOCS / "security.md").read_text().splitlines()


def test_the_user_reaches_its_prefix_and_its_tenants_only(acl_redis_url: str, keyspace: str) -> None:
    user = redis_for(acl_redis_url)
    try:
        for ks in (Keyspace(keyspace), Keyspace(keyspace).tenant("acme")):
            user.sadd(ks.topic_names, "orders")
            assert user.smembers(ks.topic_names) == {b"orders"}
            assert user.publish(ks.topics_channel, "orders") == 0
        for refused in (
            lambda: user.sadd(f"{keyspace}x:{{meta}}:topics", "orders"),  # a prefix that starts the same
            lambda: user.get("schooner:cluster"),
            lambda: user.publish("elsewhere", "x"),
            lambda: user.execute_command("SCAN", 0),
            lambda: user.execute_command("FLUSHDB"),
            lambda: user.execute_command("ACL", "WHOAMI"),
        ):
            with pytest.raises(redis.exceptions.NoPermissionError):
                refused()
    finally:
        user.close()

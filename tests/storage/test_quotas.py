"""Client quotas in Redis: entity ids, the alter script and the index, on a real redis-server."""

from __future__ import annotations

from typing import Any

import pytest

from schooner.storage import quotas
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import drive_sync, run_sync


@pytest.mark.parametrize(
    "entity",
    [
        (("user", "alice"),),
        (("user", None), ("client-id", None)),
        (("user", "<default>"), ("client-id", "a,b=c%d")),
        (("client-id", "ünïcode name"),),
        (("ip", "::1"),),
    ],
)
def test_entity_ids_round_trip(entity: quotas.Entity) -> None:
    assert quotas.parse_entity_id(quotas.entity_id(entity)) == entity


def test_a_real_name_never_reads_as_the_default() -> None:
    assert quotas.entity_id((("user", "<default>"),)) != quotas.entity_id((("user", None),))


def test_entity_of_puts_components_in_a_fixed_order() -> None:
    assert quotas.entity_of([("client-id", "c"), ("user", "u")]) == (("user", "u"), ("client-id", "c"))


def test_alter_keeps_the_index_in_step(redis_server: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    alice = (("user", "alice"),)
    default_client = (("client-id", None),)
    assert (
        run_sync(redis, quotas.alter(ks, alice, {"producer_byte_rate": 10, "request_percentage": 1.5}, ()))
        == 2
    )
    assert run_sync(redis, quotas.alter(ks, default_client, {"consumer_byte_rate": 5.0}, ())) == 1
    assert drive_sync(redis, quotas.load_all(ks)) == {
        alice: {"producer_byte_rate": 10.0, "request_percentage": 1.5},
        default_client: {"consumer_byte_rate": 5.0},
    }
    assert run_sync(redis, quotas.alter(ks, alice, {"consumer_byte_rate": 7.0}, ("producer_byte_rate",))) == 2
    assert run_sync(redis, quotas.alter(ks, alice, {}, ("consumer_byte_rate", "request_percentage"))) == 0
    assert redis.smembers(ks.quota_entities) == {b"client-id=<default>"}
    assert not redis.exists(ks.quota_entity("user=alice"))
    assert drive_sync(redis, quotas.load_all(ks)) == {default_client: {"consumer_byte_rate": 5.0}}


def test_alter_publishes_the_entity_on_the_quotas_channel(redis_server: Any, keyspace: str) -> None:
    ks = Keyspace(keyspace)
    redis = client.connect_sync(redis_server.url)
    listener = redis.pubsub()
    listener.subscribe(ks.quotas_channel)
    assert listener.get_message(timeout=5)["type"] == "subscribe"
    run_sync(redis, quotas.alter(ks, (("client-id", "app,1"),), {"producer_byte_rate": 5.0}, ()))
    message = listener.get_message(timeout=5)
    assert message is not None and message["data"] == b"client-id=app%2C1"
    listener.close()


def test_the_quotas_channel_is_documented() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "key-layout.md").read_text()
    assert f"`{Keyspace('schooner').quotas_channel}`" in text

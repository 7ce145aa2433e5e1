"""What the console changes, done from the page and checked with real clients: create and delete a topic,
change a config, produce then browse, replay a dead letter, and reset a group's offsets (refused while
the group has members)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from schooner.mq import Admin
from tests.clients import consume

from .rig import (
    BILLING,
    ORDERS,
    PAYMENTS,
    POISON_KEY,
    open_page,
    seed_dead_letter,
    seed_group,
    seed_records,
    shot,
    wait_until,
)


def _topics(bootstrap: str) -> set[str]:
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)


def test_create_and_delete_a_topic(broker: Any, console: Any, page: Any) -> None:
    open_page(page, f"{console.url}/topics", "Topics")
    form = page.locator("#create-topic")
    form.locator("input[name=name]").fill("invoices")
    form.locator("input[name=partitions]").fill("4")
    form.locator("textarea[name=configs]").fill("retention.ms=3600000")
    form.locator("button[type=submit]").click()
    page.wait_for_url("**/topics/invoices?notice=*")
    assert page.locator(".notice").inner_text() == "created topic invoices"
    assert page.locator("table").first.locator("tbody tr").count() == 4
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    meta = admin.list_topics(timeout=10).topics["invoices"]
    assert len(meta.partitions) == 4
    configs = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "invoices")])
    (entries,) = [f.result(10) for f in configs.values()]
    assert entries["retention.ms"].value == "3600000"

    config = page.locator("#alter-config")
    config.locator("input[name=key]").fill("retention.ms")
    config.locator("input[name=value]").fill("7200000")
    config.locator("button[value=set]").click()
    page.wait_for_selector(".notice")
    configs = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "invoices")])
    (entries,) = [f.result(10) for f in configs.values()]
    assert entries["retention.ms"].value == "7200000"

    page.once("dialog", lambda d: d.accept())
    page.locator("#delete-topic button").click()
    page.wait_for_url("**/topics?notice=*")
    assert page.locator(".notice").inner_text() == "deleted topic invoices"
    assert page.locator("tr[data-topic=invoices]").count() == 0
    assert "invoices" not in _topics(broker.bootstrap)


def test_a_refused_change_shows_the_brokers_error(broker: Any, console: Any, page: Any) -> None:
    seed_records(broker.bootstrap)
    open_page(page, f"{console.url}/topics", "Topics")
    form = page.locator("#create-topic")
    form.locator("input[name=name]").fill(ORDERS)  # exists already
    form.locator("button[type=submit]").click()
    page.wait_for_selector(".error")
    assert "TOPIC_ALREADY_EXISTS" in page.locator(".error").inner_text()
    assert page.locator("h1").inner_text() == "Refused"
    assert "Traceback" not in page.content()


def test_produce_from_the_page_then_browse_it(broker: Any, console: Any, page: Any, shots: Path) -> None:
    seed_records(broker.bootstrap)
    open_page(page, f"{console.url}/messages?topic={ORDERS}", "Messages")
    form = page.locator("#produce")
    form.locator("input[name=partition]").fill("2")
    form.locator("input[name=key]").fill("from-page")
    form.locator("textarea[name=value]").fill('{"made": "in the console"}')
    form.locator("textarea[name=headers]").fill("source: console\nrun: 1")
    form.locator("button[type=submit]").click()
    page.wait_for_url("**/messages?*notice=*")
    assert page.locator(".notice").inner_text() == f"produced to {ORDERS}:2 at offset 0"
    record = page.locator("tr.record[data-partition='2'][data-offset='0']")
    assert '"made": "in the console"' in record.locator("pre.json").inner_text()
    assert "source: console" in record.inner_text() and "run: 1" in record.inner_text()
    shot(page, shots, "produce")
    (msg,) = consume(broker.bootstrap, [(ORDERS, 2, 0)], 1)
    assert (msg.key(), msg.value()) == (b"from-page", b'{"made": "in the console"}')
    assert msg.headers() == [("source", b"console"), ("run", b"1")]


def test_a_dead_letter_replayed_from_the_page_is_back_on_its_topic(
    broker: Any, console: Any, page: Any, shots: Path
) -> None:
    keyspace = broker.settings.keyspace
    seed_dead_letter(broker.redis_url, keyspace, broker.bootstrap)
    admin = Admin(broker.redis_url, keyspace=keyspace)
    (letter,) = admin.dead_letters(PAYMENTS)
    open_page(page, f"{console.url}/mq/{PAYMENTS}", f"MQ topic {PAYMENTS}")
    page.locator(f"tr.letter[data-letter='{letter.letter_id}'] button", has_text="Replay").click()
    page.wait_for_url("**/mq/payments?notice=*")
    assert page.locator(".notice").inner_text() == "replayed 1 dead letter(s) to their partition"
    assert page.locator("tr.letter").count() == 0
    shot(page, shots, "replayed")
    assert admin.dead_letter_count(PAYMENTS) == 0
    # The replay is a new record at the end of its partition, which a Kafka consumer reads.
    got = consume(broker.bootstrap, [(PAYMENTS, 0, 0)], 2)
    assert [(m.offset(), m.key(), m.value()) for m in got] == [
        (0, POISON_KEY, b'{"amount": 5}'),
        (1, POISON_KEY, b'{"amount": 5}'),
    ]
    admin.close()


def test_delete_a_dead_letter_from_the_page(broker: Any, console: Any, page: Any) -> None:
    keyspace = broker.settings.keyspace
    seed_dead_letter(broker.redis_url, keyspace, broker.bootstrap)
    open_page(page, f"{console.url}/mq/{PAYMENTS}", f"MQ topic {PAYMENTS}")
    page.once("dialog", lambda d: d.accept())
    page.locator("tr.letter button", has_text="Delete").click()
    page.wait_for_url("**/mq/payments?notice=*")
    assert page.locator(".notice").inner_text() == "deleted 1 dead letter(s)"
    admin = Admin(broker.redis_url, keyspace=keyspace)
    assert admin.dead_letter_count(PAYMENTS) == 0
    admin.close()


def _committed(bootstrap: str) -> int:
    from confluent_kafka import TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": BILLING})
    try:
        (tp,) = c.committed([TopicPartition(ORDERS, 0)], timeout=10)
        return tp.offset  # type: ignore[no-any-return]
    finally:
        c.close()


def _reset(page: Any, url: str, to: str, value: str = "") -> None:
    open_page(page, url, f"Group {BILLING}")
    form = page.locator("#reset-offsets")
    form.locator("input[name=topic]").fill(ORDERS)
    form.locator("select[name=to]").select_option(to)
    form.locator("input[name=value]").fill(value)
    form.locator("button[type=submit]").click()


def test_reset_offsets_refused_while_the_group_has_members(broker: Any, console: Any, page: Any) -> None:
    seed_records(broker.bootstrap)
    seed_group(broker.bootstrap)
    url = f"{console.url}/groups/{BILLING}"
    member = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": BILLING, "enable.auto.commit": False}
    )
    member.subscribe([ORDERS])
    try:
        wait_until(lambda: member.poll(0.2) is not None or member.assignment())
        _reset(page, url, "earliest")
        page.wait_for_selector(".error")
        assert "active member" in page.locator(".error").inner_text()
        assert _committed(broker.bootstrap) == 4
    finally:
        member.close()
    wait_until(lambda: page.goto(url) and page.locator("#group-state").inner_text() == "Empty")
    _reset(page, url, "offset", "2")
    page.wait_for_url("**/groups/billing?notice=*")
    assert page.locator(".notice").inner_text().startswith("reset 3 partition(s) to offset")
    assert _committed(broker.bootstrap) == 2
    assert page.locator("#total-lag").inner_text() == str(11 - 2 + 0 + 0)  # partitions 1, 2 are empty
    _reset(page, url, "datetime", str(int(time.time() * 1000) + 3_600_000))  # after every record: the end
    page.wait_for_url("**/groups/billing?notice=*")
    assert _committed(broker.bootstrap) == 11

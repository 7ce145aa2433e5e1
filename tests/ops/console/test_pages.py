"""Every page of the console in headless chromium against a broker with data: each loads with its heading
and no error, the browser finds a record by key, the group's lag chart has points, and a screenshot of
each page is saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schooner.ops.client_options import ClientSettings
from schooner.storage.redis.embedded import free_port

from .rig import (
    BILLING,
    ORDERS,
    PAYMENTS,
    WORKERS,
    chart_data,
    open_page,
    seed_dead_letter,
    seed_group,
    seed_records,
    seed_share_group,
    shot,
    wait_until,
)


def test_every_page_loads_with_data(broker: Any, console: Any, page: Any, shots: Path) -> None:
    seed_records(broker.bootstrap)
    seed_group(broker.bootstrap)
    seed_dead_letter(broker.redis_url, broker.settings.keyspace, broker.bootstrap)
    base = console.url

    open_page(page, f"{base}/", "Overview")
    assert page.locator("#brokers tbody tr").count() == 1  # one broker
    assert broker.bootstrap.split(":")[1] in page.locator("#brokers").inner_text()
    assert "Redis" in page.locator(".cards").inner_text() and "used" in page.locator(".cards").inner_text()
    # Throughput: the sampler runs every 0.3 s; wait for two samples, reloading.
    wait_until(lambda: page.reload() and len(chart_data(page, "throughput")[0]) >= 2)
    shot(page, shots, "overview")

    open_page(page, f"{base}/topics", "Topics")
    row = page.locator(f"tr[data-topic={ORDERS}]")
    assert row.locator("td").nth(1).inner_text() == "3" and row.locator("td").nth(2).inner_text() == "11"
    assert row.locator("td").nth(3).inner_text().endswith("B")  # a size from Redis
    shot(page, shots, "topics")

    open_page(page, f"{base}/topics/{ORDERS}", f"Topic {ORDERS}")
    first = page.locator("table").first.locator("tbody tr").first.locator("td")
    assert [first.nth(i).inner_text() for i in (0, 2, 3, 4)] == ["0", "0", "11", "11"]
    assert "retention.ms" in page.locator("body").inner_text()
    shot(page, shots, "topic")

    open_page(page, f"{base}/messages?topic={ORDERS}&partition=0&start=offset&value=0&limit=5", "Messages")
    assert page.locator("tr.record").count() == 5
    assert '"total": 30' in page.locator("tr.record[data-offset='3'] pre.json").inner_text()  # pretty JSON
    shot(page, shots, "messages")

    open_page(page, f"{base}/groups", "Groups")
    assert page.locator(f"tr[data-group={BILLING}] td").nth(1).inner_text() == "classic"
    shot(page, shots, "groups")

    open_page(page, f"{base}/groups/{BILLING}", f"Group {BILLING}")
    assert page.locator("#total-lag").inner_text() == "7"  # 11 records, committed 4
    shot(page, shots, "group")

    open_page(page, f"{base}/mq", "MQ groups")
    assert page.locator(f"tr[data-topic={PAYMENTS}] td").nth(3).inner_text() == "1"
    open_page(page, f"{base}/mq/{PAYMENTS}", f"MQ topic {PAYMENTS}")
    assert page.locator("tr.letter").count() == 1
    assert "Invalid: cannot settle" in page.locator("tr.letter").inner_text()
    shot(page, shots, "dead-letters")

    open_page(page, f"{base}/security", "Users and ACLs")
    assert "SECURITY_DISABLED" in page.locator("#security-disabled").inner_text()


def test_message_browser_finds_a_record_by_key(broker: Any, console: Any, page: Any, shots: Path) -> None:
    seed_records(broker.bootstrap)
    open_page(page, f"{console.url}/messages", "Messages")
    form = page.locator("#browse")
    form.locator("select[name=topic]").select_option(ORDERS)
    form.locator("input[name=partition]").fill("all")
    form.locator("select[name=start]").select_option("key")
    form.locator("input[name=key]").fill("order-6")
    form.locator("button[type=submit]").click()  # htmx swaps the results in
    page.wait_for_selector("#record-count")
    records = page.locator("#records tr.record")
    assert records.count() == 1
    assert records.first.get_attribute("data-offset") == "6"
    assert '"order": 6' in records.first.locator("pre.json").inner_text()
    shot(page, shots, "message-search")


def test_headers_and_binary_are_shown(broker: Any, console: Any, page: Any) -> None:
    seed_records(broker.bootstrap)
    open_page(page, f"{console.url}/messages?topic={ORDERS}&partition=0&start=offset&value=10", "Messages")
    record = page.locator("tr.record[data-offset='10']")
    assert record.locator("pre.text").last.inner_text() == "plain text"
    headers = record.locator("td").nth(5).inner_text()
    assert "trace: abc" in headers and "bin: 00 ff" in headers  # not UTF-8: hex


def test_group_lag_chart_has_points(broker: Any, console_factory: Any, page: Any) -> None:
    # Seeded before the console starts: a sample taken during the seeding reads the end offsets before
    # the commit, and rightly shows no lag.
    seed_records(broker.bootstrap)
    seed_group(broker.bootstrap)
    console = console_factory(ClientSettings(broker.bootstrap), broker.redis_url)

    def points() -> int:
        page.goto(f"{console.url}/groups/{BILLING}")
        data = chart_data(page, "lag")
        return len(data[0]) if len(data) > 1 and len(data[0]) >= 2 else 0

    wait_until(points)
    data = chart_data(page, "lag")
    assert len(data) == 3  # times, total, orders:0
    assert set(data[1]) == {7} and set(data[2]) == {7}
    assert page.locator(".u-legend").count() == 1  # uPlot drew it


def test_share_group_page(broker: Any, console: Any, page: Any, shots: Path) -> None:
    seed_records(broker.bootstrap)
    seed_share_group(broker.bootstrap)
    open_page(page, f"{console.url}/groups", "Groups")
    assert page.locator(f"tr[data-group={WORKERS}] td").nth(1).inner_text() == "share"
    open_page(page, f"{console.url}/groups/{WORKERS}", f"Share group {WORKERS}")
    rows = page.locator("table").nth(1).locator("tbody tr")
    assert rows.count() >= 1
    first = rows.first.locator("td")
    assert [first.nth(i).inner_text() for i in (0, 1)] == [ORDERS, "0"]
    assert (
        first.nth(2).inner_text() == "11"
    )  # every record of partition 0 accepted: the start moved past them
    shot(page, shots, "share-group")


def test_share_groups_show_without_redis(broker: Any, console_factory: Any, page: Any) -> None:
    """Listed and described over the Kafka protocol: Redis only adds the in-flight counts."""
    seed_records(broker.bootstrap)
    seed_share_group(broker.bootstrap)
    kafka_only = console_factory(ClientSettings(broker.bootstrap), None)
    open_page(page, f"{kafka_only.url}/groups", "Groups")
    assert page.locator(f"tr[data-group={WORKERS}] td").nth(1).inner_text() == "share"
    open_page(page, f"{kafka_only.url}/groups/{WORKERS}", f"Share group {WORKERS}")
    first = page.locator("table").nth(1).locator("tbody tr").first.locator("td")
    assert [first.nth(i).inner_text() for i in (0, 1, 2, 3)] == [ORDERS, "0", "11", "-"]
    assert "read from Redis" in page.locator("body").inner_text()


def test_an_unreachable_broker_is_a_message_not_a_traceback(console_factory: Any, page: Any) -> None:
    dead = console_factory(ClientSettings(f"127.0.0.1:{free_port()}", timeout_s=2), None)
    response = page.goto(f"{dead.url}/topics")
    assert response.status in (502, 504)
    assert page.locator("h1").inner_text() == "Refused"
    assert page.locator(".error").inner_text().startswith(("_TRANSPORT", "_TIMED_OUT", "the broker did not"))
    assert "Traceback" not in page.content()
    open_page(page, f"{dead.url}/mq", "MQ groups")  # no Redis side: it says so, as a warning
    assert "--redis-url" in page.locator(".warning").inner_text()

"""The console's test rig: the console served by uvicorn in a thread, headless Debian chromium driven by
playwright, screenshots, and a broker with data (records, a classic group with lag, an MQ dead letter).

Test modules import these from here, never from one another.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.mq import Admin, ConsumerConfig, Message, Producer
from schooner.mq import Consumer as MqConsumer
from schooner.mq import DeadLetter as DeadLetterOutcome
from schooner.ops.client_options import ClientSettings
from schooner.ops.console.app import create_app
from schooner.ops.console.context import ConsoleSettings
from schooner.storage.redis.embedded import free_port
from tests.clients import Rec, confluent_produce

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip
SAMPLE_S = 0.3
ERROR_SELECTOR = ".error, [role=alert]"


@dataclass
class RunningConsole:
    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


def start_console(
    client: ClientSettings, redis_url: str | None, keyspace: str, **options: Any
) -> RunningConsole:
    settings = ConsoleSettings(client, redis_url, keyspace, sample_interval_s=SAMPLE_S, **options)
    port = free_port()
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="schooner-console", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the console did not start"
        time.sleep(0.05)
    return RunningConsole(f"http://127.0.0.1:{port}", server, thread)


def screenshots_dir(tmp_path: Path) -> Path:
    """SCHOONER_SCREENSHOTS (e.g. docs/console) when set, else a folder of the test's own."""
    where = Path(os.environ.get("SCHOONER_SCREENSHOTS") or tmp_path / "screenshots")
    where.mkdir(parents=True, exist_ok=True)
    return where


def shot(page: Any, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    return path


def open_page(page: Any, url: str, heading: str) -> None:
    """Loads a page and checks it: its heading, and no error message on it."""
    response = page.goto(url)
    assert response is not None and response.status == 200, (
        url,
        response and response.status,
        page.content(),
    )
    assert page.locator("h1").inner_text() == heading
    assert page.locator(ERROR_SELECTOR).count() == 0, page.locator(ERROR_SELECTOR).all_inner_texts()


def chart_data(page: Any, chart_id: str) -> list[list[Any]]:
    """The uPlot data a chart was drawn with (console.js keeps it on window.schoonerCharts)."""
    page.wait_for_function(f"() => window.schoonerCharts && window.schoonerCharts[{json.dumps(chart_id)}]")
    return page.evaluate(f"() => window.schoonerCharts[{json.dumps(chart_id)}]")  # type: ignore[no-any-return]


def wait_until(check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"not true within {timeout}s"
        time.sleep(interval)


# -- data -------------------------------------------------------------------------------------------
ORDERS = "orders"
BILLING = "billing"
PAYMENTS = "payments"
POISON_KEY = b"poison"


def seed_records(bootstrap: str) -> None:
    """orders: 3 partitions, 10 JSON records with keys order-0..order-9 on partition 0, one with headers."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(ORDERS, 3)])[ORDERS].result(30)
    records = [
        Rec(f"order-{i}".encode(), json.dumps({"order": i, "total": i * 10}).encode()) for i in range(10)
    ]
    records.append(Rec(b"with-headers", b"plain text", (("trace", b"abc"), ("bin", b"\x00\xff"))))
    confluent_produce(bootstrap, ORDERS, records, partition=0)


def seed_group(bootstrap: str, committed: int = 4) -> None:
    """A classic group `billing` that committed offset `committed` on orders:0 and left: it lags."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": BILLING, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(ORDERS, 0, committed)], asynchronous=False)
    finally:
        consumer.close()


def seed_dead_letter(redis_url: str, keyspace: str, bootstrap: str) -> None:
    """payments: one partition, one record dead-lettered by the MQ group `settle`."""
    kafka_admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a collected client drops its calls
    kafka_admin.create_topics([NewTopic(PAYMENTS, 1)])[PAYMENTS].result(30)
    Producer(redis_url, keyspace=keyspace).send(PAYMENTS, b'{"amount": 5}', key=POISON_KEY)

    def handler(m: Message) -> DeadLetterOutcome:
        return DeadLetterOutcome("Invalid", "cannot settle")

    admin = Admin(redis_url, keyspace=keyspace)
    config = ConsumerConfig(start="earliest", lease_ms=1500, poll_ms=10, retry_poll_ms=10)
    with MqConsumer(redis_url, PAYMENTS, "settle", handler, keyspace=keyspace, config=config):
        wait_until(lambda: admin.dead_letter_count(PAYMENTS) == 1)
    admin.close()


def launch_browser(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def browser_page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


WORKERS = "workers"


def seed_share_group(bootstrap: str, records: int = 11) -> None:
    """A share group `workers` that read orders from the earliest offset, acknowledging each poll."""
    from confluent_kafka import ShareConsumer
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})
    earliest = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    for future in admin.incremental_alter_configs(
        [ConfigResource(ResourceType.GROUP, WORKERS, incremental_configs=[earliest])]
    ).values():
        future.result(30)
    worker = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": WORKERS})
    worker.subscribe([ORDERS])
    seen: list[Any] = []
    try:
        wait_until(lambda: seen.extend(worker.poll(0.5)) or len(seen) >= records)
        worker.poll(0.5)  # acknowledges the last records
    finally:
        worker.close()

"""Fixtures of the console tests: one headless chromium per module, a fresh page per test, and a
console against the `broker` fixture (the tests seed the data they need)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from schooner.ops.client_options import ClientSettings

from .rig import RunningConsole, browser_page, launch_browser, screenshots_dir, start_console


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as p:
        b = launch_browser(p)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    yield from browser_page(browser)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    return screenshots_dir(tmp_path)


@pytest.fixture
def console_factory(keyspace: str) -> Iterator[Any]:
    started: list[RunningConsole] = []

    def make(client: ClientSettings, redis_url: str | None, **options: Any) -> RunningConsole:
        c = start_console(client, redis_url, keyspace, **options)
        started.append(c)
        return c

    yield make
    for c in started:
        c.stop()


@pytest.fixture
def console(broker: Any, console_factory: Any) -> RunningConsole:
    return console_factory(ClientSettings(broker.bootstrap), broker.redis_url)  # type: ignore[no-any-return]

"""The `quix` fixture of tests/frameworks/test_quix*.py: the Quix Streams app's rig on a test broker."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.frameworks.quix_rig import APP, Quix


@pytest.fixture
def quix(broker_factory: Callable[..., Any], tmp_path: Path) -> Iterator[Quix]:
    # A short sweep, so that the changelog topic is compacted while a test runs.
    broker = broker_factory(retention_check_ms=200)
    shutil.copy(APP, tmp_path / APP.name)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 1})
    rig = Quix(broker.bootstrap, tmp_path, admin, producer)
    yield rig
    rig.close()

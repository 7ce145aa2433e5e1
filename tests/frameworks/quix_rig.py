"""Runs the Quix Streams app of quix_counter.py as its own process against the test broker, feeds its
input topic and reads its output topic (read_committed), for tests/frameworks/test_quix*.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from tests.broker.helpers import wait

APP = Path(__file__).with_name("quix_counter.py")
# The app's own interpreter: Quix Streams lives in a venv of its own (see the Makefile).
QUIX_PYTHON = Path(__file__).parents[2] / ".venv-quix" / "bin" / "python"
GROUP = "counter"
INPUT = "words"
OUTPUT = "counts"
PARTITIONS = 2
KEYS = 6
T = 10  # seconds for one client call


@dataclass(frozen=True)
class Output:
    """One record of the output topic."""

    key: str
    value: str
    count: int
    partition: int
    offset: int


@dataclass
class App:
    process: subprocess.Popen[bytes]
    log: Path

    def running(self) -> bool:
        assert self.process.poll() is None, self.tail()
        return True

    def stop(self) -> None:
        """A clean stop: SIGTERM, as Kubernetes sends; Quix commits its checkpoint and exits."""
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(30) == 0, self.tail()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(30)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]


class Reader:
    """Reads the output topic from its start, with the given isolation level, and keeps what it read."""

    def __init__(self, bootstrap: str, isolation: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{isolation}",
                                  "isolation.level": isolation, "enable.auto.commit": False})  # fmt: skip
        self.consumer.assign([TopicPartition(OUTPUT, p, 0) for p in range(PARTITIONS)])
        self.read: list[Output] = []

    def poll(self) -> list[Output]:
        for message in self.consumer.consume(500, timeout=0.2):
            error = message.error()
            assert error is None or error.code() == KafkaError._PARTITION_EOF, error
            if error is None:
                record: dict[str, Any] = json.loads(message.value())
                self.read.append(Output(message.key().decode(), record["value"], record["count"],
                                        message.partition(), message.offset()))  # fmt: skip
        return self.read


@dataclass
class Quix:
    """The app's topics on the test broker, and the means to run it, feed it and read what it wrote."""

    bootstrap: str
    home: Path
    admin: AdminClient
    producer: Producer
    sent: list[tuple[str, str]] = field(default_factory=list)  # (key, value) in the order produced
    readers: dict[str, Reader] = field(default_factory=dict)  # by isolation level
    apps: list[App] = field(default_factory=list)

    @property
    def state_dir(self) -> Path:
        return self.home / "state"

    def start(self, guarantee: str = "at-least-once", **env: str) -> App:
        """Starts the app and waits until its topics exist (it creates them on start)."""
        settings = {"BOOTSTRAP": self.bootstrap, "GROUP": GROUP, "INPUT": INPUT, "OUTPUT": OUTPUT,
                    "PARTITIONS": str(PARTITIONS), "STATE_DIR": str(self.state_dir),
                    "GUARANTEE": guarantee, **env}  # fmt: skip
        log = self.home / f"app-{len(self.apps)}.log"
        with open(log, "wb") as sink:
            process = subprocess.Popen([str(QUIX_PYTHON), APP.name], cwd=self.home, stdout=sink,
                                       stderr=subprocess.STDOUT, env={**os.environ, **settings})  # fmt: skip
        app = App(process, log)
        self.apps.append(app)
        wait(lambda: app.running() and {INPUT, OUTPUT} <= set(self.topics()), 30,
             f"the app did not create its topics:\n{app.tail()}")  # fmt: skip
        return app

    def topics(self) -> list[str]:
        return list(self.admin.list_topics(timeout=T).topics)

    def changelogs(self) -> list[str]:
        return [name for name in self.topics() if name.startswith("changelog__")]

    def config(self, topic: str) -> dict[str, str]:
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        entries = self.admin.describe_configs([resource])[resource].result(T)
        return {name: entry.value for name, entry in entries.items()}

    def alter(self, topic: str, **configs: str) -> None:
        """Sets topic configs (IncrementalAlterConfigs); keys with `_` for `.`."""
        entries = [ConfigEntry(key.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
                   for key, value in configs.items()]  # fmt: skip
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
        self.admin.incremental_alter_configs([resource])[resource].result(T)

    def ends(self, topic: str) -> list[int]:
        consumer = self.output().consumer
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=T)[1]
                for p in range(PARTITIONS)]  # fmt: skip

    def produce(self, count: int, keys: int = KEYS) -> None:
        for _ in range(count):
            key, value = f"k{len(self.sent) % keys}", f"v{len(self.sent)}"
            self.producer.produce(INPUT, key=key, value=value)
            self.sent.append((key, value))
        assert self.producer.flush(T) == 0

    def output(self, isolation: str = "read_committed") -> Reader:
        if isolation not in self.readers:
            self.readers[isolation] = Reader(self.bootstrap, isolation)
        return self.readers[isolation]

    def wait_output(self, count: int, timeout: float = 20, isolation: str = "read_committed") -> list[Output]:
        """Waits until the output topic holds at least `count` records; returns them."""
        reader = self.output(isolation)
        wait(lambda: len(reader.poll()) >= count, timeout,
             f"{len(reader.read)} outputs of {count} ({isolation}):\n{self.apps[-1].tail()}")  # fmt: skip
        return reader.read

    def delete_state(self) -> None:
        assert any(self.state_dir.rglob("*")), "the app kept no local state"
        shutil.rmtree(self.state_dir)

    def close(self) -> None:
        for app in self.apps:
            if app.process.poll() is None:
                app.kill()
        for reader in self.readers.values():
            reader.consumer.close()


def counts_by_key(outputs: list[Output]) -> dict[str, list[int]]:
    """Each key's counts, in the order of the outputs (one partition per key, so in processing order)."""
    by_key: dict[str, list[int]] = {}
    for output in sorted(outputs, key=lambda o: (o.partition, o.offset)):
        by_key.setdefault(output.key, []).append(output.count)
    return by_key

"""Kafka Connect in distributed mode (the worker of apache_kafka/connect/pom.xml) with its config,
offset and status topics on a Schooner broker: Kafka's own file source and sink connectors move lines
from a file into a topic and from the topic into another file; a worker stopped and started again
resumes where it was, neither losing a line nor writing one twice."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

import apache_kafka
from schooner.storage.redis.embedded import free_port
from tests.java.topics import read_all

pytestmark = pytest.mark.application

INTERNAL = {"config": "connect-configs", "offset": "connect-offsets", "status": "connect-status"}


class Worker:
    """One Connect worker process; `rest` is its REST API."""

    def __init__(self, bootstrap: str, folder: Path) -> None:
        self.port = free_port()
        properties = {
            "bootstrap.servers": bootstrap,
            "group.id": "schooner-connect",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            **{f"{kind}.storage.topic": topic for kind, topic in INTERNAL.items()},
            **{f"{kind}.storage.replication.factor": "1" for kind in INTERNAL},
            "offset.flush.interval.ms": "500",
            "listeners": f"http://127.0.0.1:{self.port}",
            "plugin.discovery": "only_scan",
        }
        config = folder / "worker.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        self.log = folder / "worker.log"
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                apache_kafka.java_command(
                    "org.apache.kafka.connect.cli.ConnectDistributed",
                    str(config),
                    pom=apache_kafka.CONNECT_POM,
                ),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.wait_for(lambda: isinstance(self.call("GET", "/connectors"), list), "the REST API")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                text = answer.read()
        except (urllib.error.URLError, ConnectionError):
            return None
        return json.loads(text) if text else {}

    def wait_for(self, condition: Any, what: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert self.process.poll() is None, self.log.read_text()[-4000:]
            assert time.monotonic() < deadline, f"{what} within {timeout} s:\n" + self.log.read_text()[-4000:]
            time.sleep(0.5)

    def running(self, name: str) -> bool:
        status = self.call("GET", f"/connectors/{name}/status")
        return bool(
            status
            and status["connector"]["state"] == "RUNNING"
            and status["tasks"]
            and all(t["state"] == "RUNNING" for t in status["tasks"])
        )

    def stop(self) -> None:
        self.process.terminate()  # a clean stop: the worker flushes its source offsets and commits
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_file_connectors_move_lines_and_resume_after_a_restart(broker: Any, tmp_path: Path) -> None:
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(f"line {i}\n" for i in range(100)))
    worker = Worker(broker.bootstrap, tmp_path)
    try:
        worker.call("PUT", "/connectors/file-in/config", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": str(source), "topic": "connect-lines", "tasks.max": "1",
        })  # fmt: skip
        worker.call("PUT", "/connectors/file-out/config", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(sink), "topics": "connect-lines", "tasks.max": "1",
        })  # fmt: skip
        worker.wait_for(
            lambda: worker.running("file-in") and worker.running("file-out"), "both connectors running"
        )
        worker.wait_for(lambda: len(lines(sink)) >= 100, "the first 100 lines in the sink's file")
        assert sorted(worker.call("GET", "/connectors")) == ["file-in", "file-out"]
    finally:
        worker.stop()

    with open(source, "a") as more:  # written while no worker runs
        more.write("".join(f"line {i}\n" for i in range(100, 200)))
    worker = Worker(broker.bootstrap, tmp_path)
    try:
        worker.wait_for(lambda: len(lines(sink)) >= 200, "the next 100 lines in the sink's file")
        time.sleep(3)  # a line written twice would be there by now
    finally:
        worker.stop()
    expected = [f"line {i}" for i in range(200)]
    assert lines(sink) == expected
    assert [v for _, _, _, v in read_all(broker.bootstrap, "connect-lines", 1)] == expected

    # The worker's own topics are on Schooner, compacted as Connect requires of them.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for topic in INTERNAL.values():
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        assert admin.describe_configs([resource])[resource].result(30)["cleanup.policy"].value == "compact"
    offsets = read_all(
        broker.bootstrap,
        "connect-offsets",
        len(admin.list_topics(timeout=10).topics["connect-offsets"].partitions),
    )
    assert any('"file-in"' in key or "file-in" in key for _, _, key, _ in offsets)

"""`schooner broker --processes N`: N brokers of their own on consecutive ports over one Redis, the
embedded redis-server started once, all stopped together."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.config import Settings
from schooner.ops.processes import for_process, free_ports
from schooner.storage.redis.embedded import EmbeddedRedis
from tests.ops.helpers import SCHOONER, wait_for_port

PARTITIONS = 4
RECORDS = 400


def _open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _brokers(pid: int) -> list[int]:
    """The broker processes a supervisor started (not its redis-server or multiprocessing's helper)."""
    found = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return [p for p in found if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def _until(predicate: object, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _start(data_dir: Path, port: int, *flags: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [SCHOONER, "broker", "--data-dir", str(data_dir), "--port", str(port), "--processes", "2", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    wait_for_port(port, proc, timeout=60)
    wait_for_port(port + 1, proc, timeout=60)
    return proc


def test_each_process_is_a_broker_of_its_own_on_the_next_port() -> None:
    s = Settings(
        port=9092,
        advertise="kafka.example:19092",
        broker_id=7,
        metrics_port=9404,
        processes=3,
        listeners=["PLAINTEXT://0.0.0.0:9092", "SASL_SSL://[::1]:0"],
        advertised_listeners=["SASL_SSL://kafka.example:19093"],
        topic_defaults={"retention.ms": "1000"},
    )
    third = for_process(s, 2)
    assert (third.port, third.advertise, third.broker_id, third.metrics_port) == (
        9094,
        "kafka.example:19094",
        9,
        9406,
    )
    # Port 0 stays 0: each process binds a free port of its own.
    assert third.listeners == ["PLAINTEXT://0.0.0.0:9094", "SASL_SSL://[::1]:0"]
    assert third.advertised_listeners == ["SASL_SSL://kafka.example:19095"]
    assert third.processes == 1 and third.topic_defaults == s.topic_defaults
    first = for_process(Settings(processes=2), 0)
    assert (first.port, first.advertise, first.broker_id, first.metrics_port) == (9092, None, None, None)


def test_two_processes_serve_one_topic_together_and_ctrl_c_stops_them_and_redis(tmp_path: Path) -> None:
    port = free_ports(2)
    proc = _start(tmp_path, port)
    redis_pid = int((tmp_path / "redis" / "redis.pid").read_text())
    brokers = _brokers(proc.pid)
    try:
        bootstrap = f"127.0.0.1:{port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("spread", PARTITIONS, 1)])["spread"].result(30)
        metadata = admin.list_topics("spread", timeout=15)
        # Two brokers with their own node ids, one per port; both lead some of the partitions.
        assert sorted(b.port for b in metadata.brokers.values()) == [port, port + 1]
        leaders = {p.leader for p in metadata.topics["spread"].partitions.values()}
        assert leaders == set(metadata.brokers)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
        for i in range(RECORDS):
            producer.produce("spread", value=b"%d" % i, partition=i % PARTITIONS)
        assert producer.flush(30) == 0
        # A consumer group: its coordinator is one of the two processes; it reads from both.
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "spread-readers", "auto.offset.reset": "earliest"}
        )
        consumer.subscribe(["spread"])
        seen: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 60
        try:
            while len(seen) < RECORDS and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    raise KafkaException(msg.error())
                seen.append((msg.partition(), msg.value()))
            consumer.commit(asynchronous=False)
        finally:
            consumer.close()
        assert sorted(int(v) for _, v in seen) == list(range(RECORDS))
        assert all(int(v) % PARTITIONS == p for p, v in seen)
    finally:
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 0, out.decode()
    assert len(brokers) == 2 and all(_gone(pid) for pid in [*brokers, redis_pid]), out.decode()
    assert not _open(port) and not _open(port + 1)
    text = out.decode()
    assert text.count("embedded redis-server at") == 1 and text.count("listening on PLAINTEXT") == 2


def test_a_process_that_cannot_start_stops_the_others(tmp_path: Path) -> None:
    port = free_ports(2)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port + 1))
        taken.listen()
        done = subprocess.run(
            [SCHOONER, "broker", "--data-dir", str(tmp_path), "--port", str(port), "--processes", "2"],
            capture_output=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert b"broker process 1" in done.stderr and b"exited with 1" in done.stderr, done.stderr
    assert not _open(port)
    # The embedded redis-server was started, and stopped again (it removes its pid file on a clean stop).
    url = EmbeddedRedis.running_url(tmp_path / "redis")
    assert url is not None and not _open(int(url.rsplit(":", 1)[1].split("/")[0]))
    assert not (tmp_path / "redis" / "redis.pid").exists()


def test_brokers_do_not_outlive_a_killed_supervisor(tmp_path: Path) -> None:
    port = free_ports(2)
    proc = _start(tmp_path, port)
    redis_pid = int((tmp_path / "redis" / "redis.pid").read_text())
    brokers = _brokers(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    _until(lambda: all(_gone(pid) for pid in [*brokers, redis_pid]), "a child outlived its supervisor")
    assert not _open(port) and not _open(port + 1)

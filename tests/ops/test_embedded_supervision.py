"""The embedded redis-server is supervised: restarted from its AOF when it dies, or the broker exits
with a clear message; never a broker left answering errors forever."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from schooner.storage.redis.embedded import free_port
from tests.clients import confluent_consume
from tests.ops.helpers import start_cli_broker

pytestmark = pytest.mark.single_redis  # it configures, fills or kills the one server


def _redis_pid(data_dir: Path) -> int:
    return int((data_dir / "redis" / "redis.pid").read_text())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of a dead broker is reaped by init; count it as gone.
    state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    return state != "Z"


def _wait(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_killed_redis_is_restarted_from_its_aof_and_nothing_acknowledged_is_lost(tmp_path: Path) -> None:
    port = free_port()
    proc = start_cli_broker(tmp_path, port)
    acked: list[bytes] = []
    errors: list[object] = []
    stop = threading.Event()

    def produce() -> None:
        producer = Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{port}",
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 60000,
            }
        )

        def on_delivery(err: object, msg: object) -> None:
            if err is None:
                acked.append(msg.value())  # type: ignore[attr-defined]
            else:
                errors.append(err)

        i = 0
        while not stop.is_set():
            producer.produce("supervised", value=b"%06d" % i, partition=0, on_delivery=on_delivery)
            producer.poll(0)
            i += 1
            time.sleep(0.002)
        assert producer.flush(60) == 0

    try:
        thread = threading.Thread(target=produce)
        thread.start()
        _wait(lambda: len(acked) > 300, 30, "production did not start")
        first_pid = _redis_pid(tmp_path)
        os.kill(first_pid, signal.SIGKILL)
        killed_at, acked_before = time.monotonic(), len(acked)
        _wait(lambda: _redis_pid(tmp_path) != first_pid, 30, "redis-server was not restarted")
        restarted_at = len(acked)
        _wait(lambda: len(acked) > restarted_at, 30, "production did not resume")
        resumed_at = time.monotonic()
        _wait(lambda: len(acked) > restarted_at + 300, 30, "production did not go on")
        stop.set()
        thread.join(90)
        assert not errors, errors[:3]
        got = [m.value() for m in confluent_consume(f"127.0.0.1:{port}", "supervised", len(acked))]
        assert set(acked) <= set(got), "an acknowledged record was lost"
        assert len(got) == len(set(got)), "a record was stored twice"
        assert got == sorted(got), "order was not kept"
        assert proc.poll() is None, "the broker stays up through the restart"
        print(
            f"redis restart: {len(acked)} acknowledged ({acked_before} before the kill), 0 lost, "
            f"0 duplicated; production resumed {resumed_at - killed_at:.2f} s after the kill"
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert b"restarted from its data" in out, out.decode()[-2000:]


def test_redis_that_cannot_be_restarted_stops_the_broker_with_a_clear_message(tmp_path: Path) -> None:
    port = free_port()
    proc = start_cli_broker(tmp_path, port)
    manifests = list((tmp_path / "redis").rglob("*.manifest"))
    assert manifests, "AOF is on"
    os.kill(_redis_pid(tmp_path), signal.SIGKILL)
    for manifest in manifests:  # before the supervisor's first restart (after a backoff)
        manifest.write_text("this is not an AOF manifest\n")
    out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 1
    text = out.decode()
    assert "could not be restarted" in text, text[-2000:]
    assert "Error:" in text  # click's message for the operator, not a traceback
    assert "Traceback" not in text


def test_a_killed_broker_takes_its_embedded_redis_with_it(tmp_path: Path) -> None:
    port = free_port()
    proc = start_cli_broker(tmp_path, port)
    pid = _redis_pid(tmp_path)
    proc.kill()
    proc.wait(10)
    _wait(lambda: not _alive(pid), 10, "redis-server outlived its SIGKILLed broker")
    # and the data folder can be used again at once
    proc = start_cli_broker(tmp_path, port)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 0

"""A newcomer's first run: the README's first command as written, from a fresh folder, then its tour.

The command `make broker` runs is `.venv/bin/schooner broker` with default flags; here it runs from a
new empty working directory, so relative defaults (`.data`) are resolved the way a newcomer's are.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ops.helpers import SCHOONER, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PORT = 9092

# Both tests serve on the default port: one pytest-xdist worker runs them, one after the other.
pytestmark = pytest.mark.xdist_group("default-port")


@pytest.fixture(autouse=True)
def default_port_to_ourselves() -> Iterator[None]:
    """The port is the machine's: a test run of another checkout waits for this one, and this one for it."""
    with open(Path(tempfile.gettempdir()) / f"schooner-tests-port-{DEFAULT_PORT}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _readme_blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def _clean_env() -> dict[str, str]:
    """A newcomer has no SCHOONER_* settings; the venv's bin is on PATH as after `make broker`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCHOONER_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _start(cwd: Path) -> subprocess.Popen[bytes]:
    assert not _port_open(DEFAULT_PORT), "port 9092 is taken: stop the broker running there"
    proc = subprocess.Popen(
        [SCHOONER, "broker"], cwd=cwd, env=_clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    wait_for_port(DEFAULT_PORT, proc, timeout=60)
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> str:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out.decode()
    return out.decode()


@pytest.fixture
def newcomer_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh working directory holding only what a clone gives: the README."""
    work = tmp_path / "clone"
    work.mkdir()
    (work / "README.md").write_text((ROOT / "README.md").read_text())
    (work / ".venv").symlink_to(Path(sys.executable).parents[1])  # what `make broker` installs there
    yield work


def _run_shell_tour(cwd: Path) -> list[str]:
    """Runs each command of the README's sh tour block as written; returns their outputs."""
    tour = next(block for block in _readme_blocks("sh") if "kcat -b" in block)
    outputs = []
    for line in tour.splitlines():
        command = line.strip()
        if not command or command.startswith("#"):
            continue
        done = subprocess.run(
            ["bash", "-c", command], cwd=cwd, env=_clean_env(), capture_output=True, timeout=60
        )
        assert done.returncode == 0, (command, done.stderr.decode())
        outputs.append(done.stdout.decode())
    return outputs


def _run_python(code: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=_clean_env(), capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_first_command_as_written_then_the_tour_then_a_restart_keeps_the_data(newcomer_dir: Path) -> None:
    proc = _start(newcomer_dir)
    try:
        produced, consumed, consumed_by_schooner, from_redis = _run_shell_tour(newcomer_dir)
        assert produced == ""
        assert [line.split("  ")[0] for line in consumed.splitlines()] == [
            "k1 = hello",
            "k2 = streams",
            "k3 = world",
        ]
        assert consumed_by_schooner == consumed  # `schooner consume` formats as kcat does
        for value in (b"hello", b"streams", b"world"):
            assert value.decode() in from_redis
        python_tour, share_tour, redis_tour, avro_tour = _readme_blocks("python")
        lines = _run_python(python_tour, newcomer_dir).splitlines()
        assert len(lines) == 10 and all("order" in line for line in lines)
        lines = _run_python(share_tour, newcomer_dir).splitlines()
        assert len(lines) == 10 and all(" 1 b'order " in line for line in lines), lines  # delivery count 1
        _run_python(redis_tour, newcomer_dir)  # reads .data/redis/url relative to the folder
        # the schema registry on its default port, 8081, beside the broker
        lines = _run_python(avro_tour, newcomer_dir).splitlines()
        assert lines == ["{'id': 0, 'amount': 0.0}", "{'id': 1, 'amount': 2.5}", "{'id': 2, 'amount': 5.0}"]
    finally:
        log = _stop(proc)
    data = newcomer_dir / ".data" / "redis"
    assert (data / "url").is_file() and (data / "redis.log").is_file(), log
    assert any(data.rglob("*.aof*")), "AOF is on"

    # The second `make broker` in the same folder serves what the first one stored.
    proc = _start(newcomer_dir)
    try:
        _, consumed, _, _ = _run_shell_tour(newcomer_dir)
        values = [line.split("  ")[0] for line in consumed.splitlines()]
        assert values[:3] == ["k1 = hello", "k2 = streams", "k3 = world"]
        assert len(values) == 6  # the tour produced its three records once more
        counted = _run_python(
            "from confluent_kafka import Consumer, TopicPartition\n"
            "c = Consumer({'bootstrap.servers': '127.0.0.1:9092', 'group.id': 'count'})\n"
            "c.assign([TopicPartition('orders', p, -2) for p in range(3)])\n"
            "n = 0\n"
            "while (m := c.poll(3)) is not None:\n"
            "    n += 1\n"
            "print(n)\n",
            newcomer_dir,
        )
        assert counted.strip() == "11"  # ten orders from Kafka clients, one from plain Redis
    finally:
        _stop(proc)


def test_a_second_broker_on_the_same_data_folder_is_refused(newcomer_dir: Path) -> None:
    proc = _start(newcomer_dir)
    try:
        second = subprocess.run(
            [SCHOONER, "broker", "--port", "0"],
            cwd=newcomer_dir,
            env=_clean_env(),
            capture_output=True,
            timeout=60,
        )
        assert second.returncode != 0
        assert b"in use" in second.stderr, second.stderr
    finally:
        _stop(proc)

"""Starts the redis-server and the Schooner broker (as a subprocess) that one benchmark run uses."""

from __future__ import annotations

import _thread
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import redis

from schooner.storage.keys import Keyspace
from schooner.storage.redis.embedded import EmbeddedRedis, free_port

KEYSPACE = "bench"


def broker_command() -> list[str]:
    """The venv's `schooner` script next to this interpreter, else the same CLI through `python -m`."""
    script = Path(sys.executable).with_name("schooner")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "schooner.ops.cli"]


@dataclass(frozen=True, slots=True)
class Endpoints:
    redis_url: str
    redis_port: int
    broker_port: int
    keyspace: Keyspace
    broker_pid: int
    redis_pid: int
    schema_registry_port: int = 0  # the broker's schema registry (0: not known to be served)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def redis_client(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url)


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"broker exited with code {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"broker did not listen on port {port} within {timeout} s") from None
            time.sleep(0.05)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 15 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class BenchServers:
    """Context manager: a fresh non-persistent redis-server and one broker process on free ports."""

    def __init__(self, keyspace: str = KEYSPACE) -> None:
        self.keyspace = keyspace
        self._stack = ExitStack()
        self._broker: subprocess.Popen[bytes] | None = None
        self.broker_log: Path | None = None
        self.broker_exit_code: int | None = None  # set when the broker exits during the run
        self._stopping = threading.Event()

    def __enter__(self) -> Endpoints:
        try:
            return self._start()
        except BaseException:
            self._print_log_tail()
            self._stack.close()
            raise

    def _start(self) -> Endpoints:
        tmp = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="schooner-bench-")))
        server = EmbeddedRedis(tmp / "redis", persistent=False)
        server.start()
        self._stack.callback(server.stop)
        port = free_port()
        registry_port = free_port()  # asked for, rather than the default 8081 another process may hold
        self.broker_log = tmp / "broker.log"
        log_file = self._stack.enter_context(self.broker_log.open("wb"))
        args = [
            *broker_command(), "broker",
            "--redis-url", server.url,
            "--port", str(port),
            "--keyspace", self.keyspace,
            "--schema-registry-port", str(registry_port),
            "--log-level", "WARNING",
        ]  # fmt: skip
        self._broker = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file)
        self._stack.callback(self._stop_broker)
        wait_for_port(port, self._broker, timeout=30)
        threading.Thread(target=self._watch_broker, name="bench-broker-watchdog", daemon=True).start()
        client = redis.Redis.from_url(server.url)
        try:
            redis_pid = int(client.info("server")["process_id"])
        finally:
            client.close()
        return Endpoints(
            server.url, server.port, port, Keyspace(self.keyspace), self._broker.pid, redis_pid, registry_port
        )

    def _watch_broker(self) -> None:
        """Interrupts the main thread (as Ctrl-C would) when the broker dies, so no client waits forever."""
        process = self._broker
        assert process is not None
        while not self._stopping.wait(0.2):
            code = process.poll()
            if code is not None:
                self.broker_exit_code = code
                print(f"the broker exited with code {code} during the benchmark", file=sys.stderr)
                _thread.interrupt_main()
                return

    def _stop_broker(self) -> None:
        self._stopping.set()
        process = self._broker
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def broker_alive(self) -> bool:
        return self._broker is not None and self._broker.poll() is None

    def broker_log_tail(self, lines: int = 20) -> str:
        if self.broker_log is None or not self.broker_log.exists():
            return ""
        return "\n".join(self.broker_log.read_text(errors="replace").splitlines()[-lines:])

    def broker_log_problems(self, limit: int = 20) -> list[str]:
        """Lines of the broker's output at WARNING or above, and tracebacks (the broker logs at WARNING)."""
        if self.broker_log is None or not self.broker_log.exists():
            return []
        marks = (" WARNING ", " ERROR ", " CRITICAL ", "Traceback")
        lines = self.broker_log.read_text(errors="replace").splitlines()
        return [line for line in lines if any(mark in line for mark in marks)][:limit]

    def _print_log_tail(self) -> None:
        tail = self.broker_log_tail()
        if tail:
            print(f"--- broker log (last lines) ---\n{tail}", file=sys.stderr)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None:
            self._print_log_tail()
        self._stack.close()


def cpu_count() -> int:
    return os.cpu_count() or 1


def process_cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process so far, from /proc (0.0 where that is not available)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))
    return ticks / os.sysconf("SC_CLK_TCK")


def client_cpu_seconds() -> float:
    """CPU time of this process and of its finished children (kcat, redis-benchmark)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def machine_busy_seconds() -> float:
    """CPU time all processes on the machine have used so far (the non-idle columns of /proc/stat)."""
    try:
        with open("/proc/stat") as fh:
            ticks = [int(x) for x in fh.readline().split()[1:]]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (ticks + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU used between start() and stop() by the broker, redis-server, the benchmark's clients, and the
    rest of the machine ("other": anything else running at the same time disturbs the figures)."""

    NAMES = ("broker", "redis", "client", "other")

    def __init__(self, ep: Endpoints) -> None:
        self.ep = ep
        self._start = (0.0, 0.0, 0.0, 0.0)
        self._wall = 0.0

    def _now(self) -> tuple[float, float, float, float]:
        broker = process_cpu_seconds(self.ep.broker_pid)
        redis_cpu = process_cpu_seconds(self.ep.redis_pid)
        client = client_cpu_seconds()
        return broker, redis_cpu, client, machine_busy_seconds() - broker - redis_cpu - client

    def start(self) -> None:
        self._start = self._now()
        self._wall = time.perf_counter()

    def used(self) -> dict[str, float]:
        """Each one's CPU seconds since start()."""
        deltas = zip(self.NAMES, self._start, self._now(), strict=True)
        return {name: max(0.0, b - a) for name, a, b in deltas}

    def stop(self) -> dict[str, float]:
        """Each process's share of one core over the interval (1.0 = one core busy all the time)."""
        wall = time.perf_counter() - self._wall
        return {name: round(seconds / wall, 3) for name, seconds in self.used().items()}


def stop_on_sigterm() -> None:
    """A SIGTERM to the bench unwinds it as an error would, so every server and broker it started is
    stopped (their context managers' exits run)."""

    def _exit(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)

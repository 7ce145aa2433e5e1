"""`schooner broker --processes N`: N broker processes on one host, stopped together.

One broker process runs one asyncio loop, so it uses one core. Here each process is a broker of its
own: its own port (consecutive from the first), its own node id (allocated from Redis), the same Redis
and keyspace. Metadata then lists every process and spreads partition leaders and group coordinators
across them, so even one client's partitions are served by all the cores.

Not one port shared with SO_REUSEPORT: the kernel hands each new connection to any of the processes,
all under one node id. The state a broker keeps in memory would then be split at random: the classic
group coordinator's waiting JoinGroup/SyncGroup requests and timers (each member's connection could
reach another process, every process would claim the group in Redis and fence the others), KIP-227
fetch sessions and KIP-932 share sessions (a reconnect would find another process's cache), and the
per-partition order of appends. Distinct node ids keep every client on the process Metadata named.

This process only supervises: it starts the children (spawned: each a fresh interpreter), stops them
all with SIGTERM on SIGINT or SIGTERM, and stops the rest as soon as one exits.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import socket
import threading
from collections.abc import Callable
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType

from ..config import Listener, Settings
from ..storage.redis.embedded import EmbeddedRedis, die_with_parent, free_port

STOP_GRACE_SECONDS = 15.0  # past shutdown_timeout_ms, before a child that has not exited is killed

# The function each child runs: (its settings, the Redis URL, the log level).
Serve = Callable[[Settings, str, str], None]


def free_ports(count: int) -> int:
    """The first of `count` consecutive free ports on 127.0.0.1 (for tests and benchmarks of --processes)."""
    while True:
        first = free_port()
        probes = [socket.socket() for _ in range(count - 1)]
        try:
            for n, probe in enumerate(probes, start=1):
                probe.bind(("127.0.0.1", first + n))
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
        return first


def _shifted(port: int, index: int) -> int:
    return port + index if port else 0  # port 0: each process gets a free port of its own


def _moved(listeners: list[str], index: int) -> list[str]:
    """PROTOCOL://host:port texts with each port moved up by `index`."""
    out = []
    for listener in map(Listener.parse, listeners):
        host = f"[{listener.host}]" if ":" in listener.host else listener.host
        out.append(f"{listener.protocol}://{host}:{_shifted(listener.port, index)}")
    return out


def for_process(settings: Settings, index: int) -> Settings:
    """The settings of process `index` (from 0): every port (listeners, advertised addresses, metrics)
    and a fixed broker id moved up by `index`; everything else the same."""
    host, _, port = (settings.advertise or "").rpartition(":")
    return dataclasses.replace(
        settings,
        processes=1,
        port=_shifted(settings.port, index),
        advertise=f"{host}:{_shifted(int(port), index)}" if settings.advertise else None,
        listeners=_moved(settings.listeners, index),
        advertised_listeners=_moved(settings.advertised_listeners, index),
        broker_id=None if settings.broker_id is None else settings.broker_id + index,
        metrics_port=settings.metrics_port + index if settings.metrics_port else settings.metrics_port,
        # One registry for the group of processes, served by the first (they share its Redis).
        schema_registry_port=0 if index else settings.schema_registry_port,
        topic_defaults=dict(settings.topic_defaults),
    )


def _child(serve: Serve, settings: Settings, redis_url: str, log_level: str, supervisor: int) -> None:
    """A child's first steps: SIGTERM when the supervisor dies (even SIGKILLed), so no broker outlives
    it; Ctrl-C reaches the supervisor, which passes it on as SIGTERM. Then the broker."""
    die_with_parent()
    if os.getppid() != supervisor:  # it died before the line above
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # until the broker's loop handles it as a stop
    serve(settings, redis_url, log_level)


def run(
    settings: Settings, redis_url: str, log_level: str, serve: Serve, embedded: EmbeddedRedis | None
) -> str | None:
    """Runs settings.processes brokers until SIGINT/SIGTERM or until one exits; returns why they had to
    stop (a child failed, or the embedded redis-server could not be restarted), or None."""
    stop = threading.Event()
    reasons: list[str] = []

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    spawn = multiprocessing.get_context("spawn")
    children: list[BaseProcess] = []
    try:
        for index in range(settings.processes):
            child = spawn.Process(
                target=_child,
                args=(serve, for_process(settings, index), redis_url, log_level, os.getpid()),
                name=f"schooner-broker-{index}",
            )
            child.start()
            children.append(child)
        if embedded is not None:

            def give_up(why: str) -> None:  # on the redis-server's supervisor thread
                reasons.append(why)
                stop.set()

            embedded.supervise(give_up)
        while not stop.is_set():
            wait([c.sentinel for c in children], timeout=0.2)
            for index, each in enumerate(children):
                if each.exitcode is not None and not stop.is_set():
                    reasons.append(f"broker process {index} (pid {each.pid}) exited with {each.exitcode}")
                    stop.set()
    finally:
        _stop_all(children, settings.shutdown_timeout_ms / 1000 + STOP_GRACE_SECONDS)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return reasons[0] if reasons else None


def _stop_all(children: list[BaseProcess], timeout: float) -> None:
    """SIGTERM to every child still running (each stops gracefully), then SIGKILL to any left."""
    for child in children:
        if child.exitcode is None and child.pid is not None:
            os.kill(child.pid, signal.SIGTERM)
    for child in children:
        child.join(timeout)
        if child.exitcode is None:
            child.kill()
            child.join()

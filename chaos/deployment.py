"""A whole Schooner deployment on this machine, every link behind a FaultProxy so a nemesis can fail it.

- Redis: one redis-server with AOF (appendfsync everysec), or a Redis Cluster of 3 primaries with a
  replica each. Each node announces its proxy's port (cluster-announce-port), so CLUSTER SLOTS sends
  every client through the proxies: the brokers, and the replicas' replication links too. The cluster
  bus stays direct, so cutting a node's proxy cuts its clients off without making the cluster fail it.
- brokers: `python -m schooner.ops.entry broker` processes with fixed broker ids, each advertising the
  port of the proxy in front of it, so Metadata routes clients through that proxy. Each has a log file
  in the work dir (appended to across restarts).
- the cold store: moto's S3 server behind a proxy; the brokers archive through it.

Settings are tuned so faults are noticed fast (broker session 2 s, Redis round trips bounded at 5 s,
archiving every second). Processes are started from one long-lived thread: an embedded redis-server
dies with the thread that started it (die_with_parent), and a nemesis thread restarts nodes.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import redis
from confluent_kafka import Producer
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.metadata.v12.response import MetadataResponse

from schooner.protocol.client import decode_response, encode_request
from schooner.storage.redis.embedded import EmbeddedRedis, free_port
from schooner.storage.redis.embedded_cluster import BUS_OFFSET, EmbeddedCluster

from .proxy import FaultProxy
from .s3 import S3Server, start_s3_server, stop_s3_server

T = TypeVar("T")
PROBE_TOPIC = "chaos-probe"
S3_REGION, S3_KEY, S3_SECRET = "us-east-1", "test", "test"


@dataclass
class DeploymentSpec:
    work_dir: Path
    redis: Literal["single", "cluster"] = "single"
    brokers: int = 3
    cold_store: bool = True
    keyspace: str = "chaos"
    # acks=all waits for the AOF fsync too: without it a killed redis-server may lose the last second of
    # acknowledged records, by design, and the checker would report that as data loss.
    acks_all_fsync: bool = True
    session_ms: int = 2000  # a broker silent this long leaves Metadata
    broker_env: dict[str, str] = field(default_factory=dict)  # more SCHOONER_* settings, or overrides


def broker_settings(spec: DeploymentSpec) -> dict[str, str]:
    """The environment every broker gets, before its own id, port and advertised address."""
    return {
        "SCHOONER_HEARTBEAT_MS": str(max(100, spec.session_ms // 6)),
        "SCHOONER_SESSION_MS": str(spec.session_ms),
        "SCHOONER_GROUP_INITIAL_REBALANCE_DELAY_MS": "100",
        # Lets the workloads' consumers use short session timeouts, so a dead member is noticed fast.
        "SCHOONER_GROUP_MIN_SESSION_MS": "1000",
        "SCHOONER_REDIS_TIMEOUT_MS": "5000",
        "SCHOONER_ARCHIVE_INTERVAL_MS": "1000",
        "SCHOONER_TRANSACTION_CHECK_MS": "500",
        "SCHOONER_ACKS_ALL_FSYNC": "true" if spec.acks_all_fsync else "false",
        **spec.broker_env,
    }


class Broker:
    """One broker process and the proxy clients reach it through; restarts reuse its port."""

    def __init__(
        self, index: int, redis_url: str, keyspace: str, env: dict[str, str], log_path: Path
    ) -> None:
        self.index = index
        self.id = index + 1  # fixed, so a restarted broker takes its place back
        self.port = free_port()
        self.proxy = FaultProxy(self.port)
        self.log_path = log_path
        self.paused = False
        self.process: subprocess.Popen[bytes] | None = None
        self._args = [sys.executable, "-m", "schooner.ops.entry", "broker", "--redis-url", redis_url,
                      "--port", str(self.port), "--keyspace", keyspace]  # fmt: skip
        self._env = {
            **os.environ,
            **env,
            "SCHOONER_BROKER_ID": str(self.id),
            "SCHOONER_ADVERTISE": self.proxy.address,
        }

    @property
    def name(self) -> str:
        return f"broker-{self.index}"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = 60.0) -> int:
        """Starts the process and waits until it listens; returns its pid."""
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(self._args, stdout=log, stderr=subprocess.STDOUT, env=self._env)
        self.paused = False
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}: see {self.log_path}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self.process.pid
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name} did not listen in {timeout:.0f} s") from None
                time.sleep(0.1)

    def signal(self, sig: signal.Signals) -> None:
        if self.alive:
            assert self.process is not None
            self.process.send_signal(sig)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        self.paused = False

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.signal(signal.SIGCONT)  # a stopped process would not act on SIGTERM
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.paused = False


class Deployment:
    """Start with `with Deployment(spec) as d:` (or start()/stop()); `bootstrap` is for the clients."""

    def __init__(self, spec: DeploymentSpec) -> None:
        self.spec = spec
        self.work_dir = Path(spec.work_dir).absolute()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.keyspace = spec.keyspace
        self.single: EmbeddedRedis | None = None
        self.cluster: EmbeddedCluster | None = None
        self.redis_proxies: list[FaultProxy] = []  # one per Redis node, in node order
        self.brokers: list[Broker] = []
        self.s3: S3Server | None = None
        self.s3_proxy: FaultProxy | None = None
        self.bucket = "chaos"
        self.pids: list[int] = []  # every process ever started, for stop() to prove none is left
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="chaos-spawner")

    # -- starting ---------------------------------------------------------------------------------
    def start(self) -> Deployment:
        try:
            self._start_redis()
            cold = self._start_cold_store()
            env = broker_settings(self.spec) | cold
            url = self.redis_proxies[0].url
            for i in range(self.spec.brokers):
                log_path = self.work_dir / f"broker-{i}.log"
                self.brokers.append(Broker(i, url, self.keyspace, env, log_path))
            for b in self.brokers:
                self.pids.append(self._spawn(b.start))
            self.wait_healthy(60)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_redis(self) -> None:
        if self.spec.redis == "single":
            self.single = EmbeddedRedis(self.work_dir / "redis", persistent=True)
            self.redis_proxies = [FaultProxy(self.single.port)]
            self._spawn(self.single.start)
            self.redis_proxies[0].password = self.single.password
            self._note_redis_pids()
            return
        cluster = EmbeddedCluster(self.work_dir / "redis-cluster", 3, 1, persistent=True)
        self.cluster = cluster
        for node in cluster.nodes:
            proxy = FaultProxy(node.port)
            self.redis_proxies.append(proxy)
            node.extra_args += ["--cluster-announce-port", str(proxy.port),
                                "--cluster-announce-bus-port", str(node.port + BUS_OFFSET)]  # fmt: skip
        try:
            self._spawn(cluster.start)
        finally:
            self._note_redis_pids()

    def _start_cold_store(self) -> dict[str, str]:
        if not self.spec.cold_store:
            return {}
        self.s3 = start_s3_server()
        self.pids.append(self.s3.process.pid)
        self.s3_proxy = FaultProxy(self.s3.port)
        self.s3.bucket(self.bucket)
        return {
            "SCHOONER_COLD_STORE_URL": f"s3://{self.bucket}/tiered",
            "SCHOONER_COLD_STORE_ENDPOINT": f"http://{self.s3_proxy.address}",
            "SCHOONER_COLD_STORE_REGION": S3_REGION,
            "SCHOONER_COLD_STORE_ACCESS_KEY_ID": S3_KEY,
            "SCHOONER_COLD_STORE_SECRET_ACCESS_KEY": S3_SECRET,
        }

    def _spawn(self, start: Callable[[], T]) -> T:
        return self._spawner.submit(start).result()

    def _note_redis_pids(self) -> None:
        for node in self.redis_nodes:
            if node.pid is not None and node.pid not in self.pids:
                self.pids.append(node.pid)

    # -- what clients and readers use ---------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(b.proxy.address for b in self.brokers)

    @property
    def redis_nodes(self) -> list[EmbeddedRedis]:
        if self.cluster is not None:
            return self.cluster.nodes
        return [self.single] if self.single is not None else []

    @property
    def redis_url(self) -> str:
        """Direct to redis-server (node 0 of a cluster, whose slot map names the proxies)."""
        return self.redis_nodes[0].url

    @property
    def cold_store_options(self) -> dict[str, str]:
        """What a reader of the cold tier needs; `endpoint` is the store itself, not its proxy."""
        if self.s3 is None or self.s3_proxy is None:
            return {}
        return {
            "url": f"s3://{self.bucket}/tiered",
            "bucket": self.bucket,
            "prefix": "tiered",
            "endpoint": self.s3.endpoint,
            "proxy_endpoint": f"http://{self.s3_proxy.address}",
            "region": S3_REGION,
            "access_key_id": S3_KEY,
            "secret_access_key": S3_SECRET,
        }

    @property
    def session_s(self) -> float:
        return self.spec.session_ms / 1000

    # -- faults -------------------------------------------------------------------------------------
    def kill_broker(self, i: int) -> None:
        self.brokers[i].kill()

    def pause_broker(self, i: int) -> None:
        self.brokers[i].signal(signal.SIGSTOP)
        self.brokers[i].paused = True

    def resume_broker(self, i: int) -> None:
        self.brokers[i].signal(signal.SIGCONT)
        self.brokers[i].paused = False

    def restart_broker(self, i: int) -> None:
        broker = self.brokers[i]
        broker.stop()
        self.pids.append(self._spawn(broker.start))

    def kill_redis(self, node: int = 0) -> None:
        """SIGKILL one redis-server (not restarted until restart_redis or heal_all)."""
        self.redis_nodes[node].kill()

    def restart_redis(self, node: int = 0) -> None:
        """The same port and data dir: it replays its AOF (a cluster node rejoins, as a replica if its
        replica was promoted meanwhile)."""
        self._spawn(self.redis_nodes[node].start)
        self._note_redis_pids()

    def primaries(self) -> list[int]:
        """Indexes of the live nodes that are primaries now (the one node of a single Redis)."""
        if self.cluster is None:
            return [0]
        ports = set(self.cluster.primary_ports())
        return [i for i, node in enumerate(self.cluster.nodes) if node.port in ports]

    def set_memory_full(self, full: bool) -> None:
        """full: maxmemory at half the memory used now on every primary, so writes are refused
        (noeviction); else no limit. Half, not just under: the memory used moves by a few percent as
        client buffers fill and drain, and a limit just under it let writes through again."""
        for i in self.primaries():
            client = self._node_client(i)
            try:
                limit = int(client.info("memory")["used_memory"] // 2) if full else 0
                client.config_set("maxmemory-policy", "noeviction")
                client.config_set("maxmemory", limit)
            finally:
                client.close()

    def _node_client(self, node: int) -> redis.Redis:
        n = self.redis_nodes[node]
        return redis.Redis(port=n.port, password=n.password, socket_timeout=5, decode_responses=True)

    def heal_all(self) -> None:
        """Ends every fault: proxies flow, paused brokers resume, dead brokers and Redis nodes restart,
        memory is unlimited again."""
        for proxy in self._proxies():
            proxy.heal()
        dead = [i for i, node in enumerate(self.redis_nodes) if node.pid is None]
        for i in dead:
            self.restart_redis(i)
        if dead and self.cluster is not None:
            self.cluster.wait_ok(60)
        for b in self.brokers:
            if b.paused:
                self.resume_broker(b.index)
        for b in self.brokers:
            if not b.alive:
                self.restart_broker(b.index)
        self.set_memory_full(False)

    def _proxies(self) -> list[FaultProxy]:
        s3 = [self.s3_proxy] if self.s3_proxy is not None else []
        return [*self.redis_proxies, *(b.proxy for b in self.brokers), *s3]

    # -- health -------------------------------------------------------------------------------------
    def serves(self, timeout: float = 5.0) -> str | None:
        """None when the deployment serves: Redis answers, every broker answers Metadata through its
        proxy listing every broker, and a probe record is acknowledged; else what did not."""
        deadline = time.monotonic() + timeout
        for i, node in enumerate(self.redis_nodes):
            try:
                client = self._node_client(i)
                try:
                    client.ping()
                finally:
                    client.close()
            except redis.RedisError as exc:
                return f"redis node {i} (port {node.port}): {exc}"
        for b in self.brokers:
            listed = metadata_brokers(b.proxy.port, max(0.5, deadline - time.monotonic()))
            if listed != len(self.brokers):
                return f"{b.name} Metadata lists {listed} brokers"
        return probe_produce(self.bootstrap, max(1.0, deadline - time.monotonic()))

    def wait_healthy(self, timeout: float = 60.0) -> float:
        """Waits until serves(); returns the seconds it took. RuntimeError after `timeout`."""
        started = time.monotonic()
        while True:
            left = started + timeout - time.monotonic()
            why = self.serves(min(5.0, max(left, 0.5)))
            if why is None:
                return time.monotonic() - started
            if left <= 0:
                raise RuntimeError(f"the deployment does not serve after {timeout:.0f} s: {why}")
            time.sleep(0.2)

    # -- stopping -----------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stops every process it started (brokers, Redis, the S3 server) and closes the proxies."""
        for proxy in self._proxies():
            proxy.heal()  # a stalled link would hold a broker's shutdown
        for b in self.brokers:
            b.stop()
        if self.cluster is not None:
            self._spawn(self.cluster.stop)
        elif self.single is not None:
            self._spawn(self.single.stop)
        if self.s3 is not None:
            stop_s3_server(self.s3)
        for proxy in self._proxies():
            proxy.close()
        self._spawner.shutdown()

    def __enter__(self) -> Deployment:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def metadata_brokers(port: int, timeout: float) -> int | None:
    """How many brokers a Metadata request (no topics) to 127.0.0.1:port lists; None without an answer."""
    request = MetadataRequest(
        topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(encode_request(request, 1, "chaos-health"))
            size = struct.unpack(">i", _read(sock, 4))[0]
            _, response = decode_response(_read(sock, size), request)
    except (OSError, ValueError, struct.error):
        return None
    assert isinstance(response, MetadataResponse)
    return len(response.brokers)


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed mid-response")
        data += chunk
    return data


def probe_produce(bootstrap: str, timeout: float) -> str | None:
    """Produces one acks=all record to the probe topic: None once acknowledged, else the error."""
    result: list[Any] = []
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "message.timeout.ms": int(timeout * 1000),
        "socket.connection.setup.timeout.ms": max(1000, int(timeout * 1000)),
        "logger": _QUIET,  # its connection errors are expected under faults
    })  # fmt: skip
    producer.produce(PROBE_TOPIC, b"probe", on_delivery=lambda err, msg: result.append(err))
    producer.flush(timeout + 1)
    if not result:
        return "probe record not delivered"
    return None if result[0] is None else f"probe record: {result[0]}"


_QUIET = logging.getLogger("chaos.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False

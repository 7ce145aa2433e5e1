"""Apache Kafka beside Schooner: the pinned release (pom.xml) as a single-node KRaft broker, and its tools.

The jars come from Maven Central through `mvn dependency:build-classpath`, once per pom (the classpath is
kept in .cache/apache-kafka, the jars in Maven's local repository); nothing is built. A broker is
`kafka-storage format` then `kafka.Kafka`, on free ports, its data in a folder of the caller's, stopped
with it. The benchmarks measure it side by side with Schooner and the conformance tests take its answers as
the specification. Java programs of the tests (Kafka's clients driven from Java) are compiled against
the same jars with the JDK's javac (compiled_classes), kept by the hash of their sources.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import socket
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET
from base64 import urlsafe_b64encode
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from schooner.storage.redis.embedded import free_port

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
CONNECT_POM = HERE / "connect" / "pom.xml"  # Kafka Connect and MirrorMaker 2, of an older release
SPARK_POM = HERE / "spark" / "pom.xml"  # Spark's Kafka connector, of the pinned PySpark's release
SPARK_TABLES_POM = HERE / "spark_tables" / "pom.xml"  # Delta Lake's Spark reader, for the pinned PySpark
LOG_CONFIG = HERE / "log4j2.xml"
CACHE = HERE.parent / ".cache" / "apache-kafka"

# The command-line tools as users call them (bin/<name>.sh runs the class with the broker's classpath).
TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
}

# A single-node broker answers as a production one would, except for the replication of its internal
# topics (one replica here) and the first rebalance's wait, which only slows tests down.
BROKER_DEFAULTS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}


def version() -> str:
    """The pinned Kafka release, as pom.xml names it."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    found = ET.parse(POM).getroot().find("m:properties/m:kafka.version", ns)
    assert found is not None and found.text, "pom.xml names no kafka.version"
    return found.text


def classpath(pom: Path = POM) -> str:
    """The jars of the pom's release, resolved by Maven the first time (for this pom) and kept."""
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    CACHE.mkdir(parents=True, exist_ok=True)
    kept = CACHE / f"classpath-{digest}.txt"
    with open(CACHE / "resolve.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers resolve once between them
        if kept.exists() and all(Path(jar).exists() for jar in kept.read_text().split(os.pathsep)):
            return kept.read_text()
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError("Maven is missing: `make test-system-deps` installs it")
        partial = kept.with_suffix(".partial")
        subprocess.run(
            [mvn, "-q", "-B", "-f", str(pom), "dependency:build-classpath", f"-Dmdep.outputFile={partial}"],
            check=True,
            timeout=900,
        )
        partial.replace(kept)
        return kept.read_text()


def spark_connector_jars(provided: Path) -> list[str]:
    """The jars of Spark's Kafka connector for spark.jars: those whose artifact the `provided` folder
    (PySpark's jars) lacks, so that no second copy of a jar Spark has comes first."""
    have = {re.sub(r"-\d[\w.\-]*\.jar$", "", jar.name) for jar in provided.glob("*.jar")}
    jars = classpath(SPARK_POM).split(os.pathsep)
    return [jar for jar in jars if Path(jar).parent.parent.name not in have]  # .../<artifact>/<version>/


def spark_table_jars(provided: Path) -> list[str]:
    """The jars of Delta Lake's own Spark reader (format("delta")) for spark.jars, as spark_connector_jars
    gives the connector's: those whose artifact the `provided` folder (PySpark's jars) lacks."""
    have = {re.sub(r"-\d[\w.\-]*\.jar$", "", jar.name) for jar in provided.glob("*.jar")}
    jars = classpath(SPARK_TABLES_POM).split(os.pathsep)
    return [jar for jar in jars if Path(jar).parent.parent.name not in have]


def spark_connector_version() -> str:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    found = ET.parse(SPARK_POM).getroot().find("m:properties/m:spark.version", ns)
    assert found is not None and found.text, "spark/pom.xml names no spark.version"
    return found.text


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found:
        raise RuntimeError("Java 17 or later is needed to run Apache Kafka")
    return found


def java_command(
    main_class: str, *args: str, heap: str = "512m", classes: Path | None = None, pom: Path = POM
) -> list[str]:
    """The command that runs main_class on the release's jars (and a folder of compiled classes)."""
    path = classpath(pom) if classes is None else f"{classes}{os.pathsep}{classpath(pom)}"
    return [
        java(),
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        f"-Dlog4j2.configurationFile={LOG_CONFIG}",
        "-cp",
        path,
        main_class,
        *args,
    ]


def compiled_classes(*sources: Path) -> Path:
    """The Java sources compiled against the release's jars, once per content (parallel test workers
    compile once between them); returns the folder of their classes."""
    jars = classpath()
    digest = hashlib.sha256(jars.encode() + b"".join(s.read_bytes() for s in sources)).hexdigest()[:16]
    out = CACHE / f"classes-{digest}"
    with open(CACHE / "compile.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / ".done").exists():
            return out
        home = os.environ.get("JAVA_HOME")
        javac = str(Path(home) / "bin" / "javac") if home else shutil.which("javac")
        if not javac:
            raise RuntimeError("javac (a JDK 17 or later) is needed to compile the Java clients' programs")
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([javac, "-cp", jars, "-d", str(out), *map(str, sources)], check=True, timeout=300)
        (out / ".done").touch()
        return out


def run_tool(name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """One of Kafka's command-line tools (TOOLS), run to its end; its output is returned, not checked."""
    return subprocess.run(
        java_command(TOOLS[name], *args, heap="256m"), capture_output=True, text=True, timeout=timeout
    )


@dataclass
class ApacheKafka:
    """A running single-node Kafka: `bootstrap` for clients, `process` for its pid, `stop()` to end it."""

    port: int
    controller_port: int
    data_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(
    data_dir: Path, overrides: Mapping[str, str] | None = None, heap: str = "1g", timeout: float = 120
) -> ApacheKafka:
    """Formats `data_dir` as a new cluster and starts a broker (also its controller) on it."""
    port, controller_port = free_port(), free_port()
    props = {
        **BROKER_DEFAULTS,
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(data_dir / "log"),
        **(overrides or {}),
    }
    data_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    cluster_id = urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    subprocess.run(
        java_command("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config)),
        check=True,
        capture_output=True,
        timeout=timeout,
    )
    log_path = data_dir / "kafka.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            java_command("kafka.Kafka", str(config), heap=heap),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a terminal's Ctrl-C reaches the runner, which stops Kafka itself
        )
    broker = ApacheKafka(port, controller_port, data_dir, process, log_path, props)
    try:
        _wait_ready(broker, timeout)
    except BaseException:
        broker.stop()
        raise
    return broker


@contextlib.contextmanager
def running(
    data_dir: Path, overrides: Mapping[str, str] | None = None, heap: str = "1g"
) -> Iterator[ApacheKafka]:
    broker = start(data_dir, overrides, heap)
    try:
        yield broker
    finally:
        broker.stop()


def _wait_ready(broker: ApacheKafka, timeout: float) -> None:
    """Until the listener accepts and the broker answers Metadata with itself (it has caught up with its
    controller); a listener alone may still refuse requests while the broker fences itself."""
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + timeout
    while True:
        if broker.process.poll() is not None:
            tail = broker.log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"Kafka exited with {broker.process.returncode} before serving:\n{tail}")
        try:
            with socket.create_connection(("127.0.0.1", broker.port), timeout=0.5):
                pass
            brokers = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=5).brokers
            if brokers:
                return
        except Exception:  # not listening yet, or not yet serving metadata
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"Kafka did not serve within {timeout} s (log: {broker.log_path})")
        time.sleep(0.1)

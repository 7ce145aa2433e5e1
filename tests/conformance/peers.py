"""The two brokers of a conformance test, and how their answers are compared.

A scenario is a function of a `Peer` that sends requests (raw, through tests/wire.py, or with a real client)
and returns what it saw. It runs against Apache Kafka and against Schooner with the same topic names, and
the answers must be equal once the fields that may differ are set aside: ids a broker makes up (node,
cluster, topic and member ids), throttle times, timestamps of the moment, and error messages, whose
wording is each broker's own: where Kafka gives a message Schooner must give one too.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v5.request import InitProducerIdRequest
from kio.schema.list_offsets.v9.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_fetch.v8.request import OffsetFetchRequest, OffsetFetchRequestGroup

from tests.wire import call, create_topics

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3

# Fields whose values each broker makes up: compared for presence only, or not at all.
MADE_UP = frozenset(
    {
        "throttle_time_ms",
        "throttle_time",
        "node_id",
        "leader_id",
        "coordinator_id",
        "cluster_id",
        "controller_id",
        "topic_id",
        "member_id",
        "host",
        "port",
        "log_append_time_ms",
        "log_append_time",
        "current_leader",
        "node_endpoints",
        "leader_epoch",
        "replica_nodes",
        "isr_nodes",
        "offline_replicas",
        "eligible_leader_replicas",
        "last_known_elr",
        "topic_authorized_operations",
        "cluster_authorized_operations",
    }
)
MESSAGES = frozenset({"error_message", "message", "batch_index_error_message"})


@dataclass(frozen=True)
class Peer:
    name: str  # "kafka" or "schooner"
    port: int
    bootstrap: str
    broker_id: int = 1

    def call(self, body: Any) -> Any:
        return call(self.port, body)


def unique(prefix: str) -> str:
    """A topic or group name no earlier test used, on either broker (Kafka lives for the session)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def plain(value: Any, drop: frozenset[str] = frozenset()) -> Any:
    """A response as nested dicts, lists and scalars, with made-up fields masked and messages reduced to
    whether there is one; `drop` masks more fields by name."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            if f.name in MADE_UP or f.name in drop:
                continue
            v = getattr(value, f.name)
            out[f.name] = bool(v) if f.name in MESSAGES else plain(v, drop)
        return out
    if isinstance(value, dict):
        return {k: plain(v, drop) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [plain(v, drop) for v in value]
    if isinstance(value, ErrorCode):
        return value.name
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return "uuid"
    return value


def differences(kafka: Any, schooner: Any, path: str = "") -> list[str]:
    """Where two plain answers differ, as readable paths (an empty list: the same)."""
    if isinstance(kafka, dict) and isinstance(schooner, dict):
        out = []
        for key in sorted(set(kafka) | set(schooner)):
            if key not in kafka or key not in schooner:
                out.append(f"{path}.{key}: only in {'kafka' if key in kafka else 'schooner'}")
            else:
                out.extend(differences(kafka[key], schooner[key], f"{path}.{key}"))
        return out
    if isinstance(kafka, list) and isinstance(schooner, list) and len(kafka) == len(schooner):
        return [
            d
            for i, (k, s) in enumerate(zip(kafka, schooner, strict=True))
            for d in differences(k, s, f"{path}[{i}]")
        ]
    if path.rsplit(".", 1)[-1] in MESSAGES and kafka is False:
        return []  # Schooner may explain an error Kafka leaves bare
    if kafka != schooner:
        return [f"{path or '.'}: kafka {kafka!r}, schooner {schooner!r}"]
    return []


def same_answers(scenario: Callable[[Peer], Any], kafka: Peer, schooner: Peer) -> tuple[Any, Any]:
    """Runs a scenario on both brokers and fails with every difference listed; returns both answers."""
    from_kafka, from_schooner = plain(scenario(kafka)), plain(scenario(schooner))
    diff = differences(from_kafka, from_schooner)
    assert not diff, "Schooner answers differently from Kafka:\n  " + "\n  ".join(diff)
    return from_kafka, from_schooner


def create_topic(peer: Peer, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    """Creates a new topic and waits until every partition has a leader (Kafka propagates its metadata to
    the broker a moment after CreateTopics answers)."""
    create_topics(peer.port, name, partitions=partitions, configs=configs, exist_ok=False)
    wait_for_leaders(peer, [name], partitions)


def wait_for_leaders(peer: Peer, names: Iterable[str], partitions: int, timeout: float = 30) -> None:
    names = list(names)
    request = MetadataRequest(
        topics=tuple(MetadataRequestTopic(name=n, topic_id=uuid.UUID(int=0)) for n in names),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    # Metadata may name a leader before the leader serves the partition: ListOffsets asks the leader.
    listing = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=tuple(
            ListOffsetsTopic(
                name=n,
                partitions=tuple(
                    ListOffsetsPartition(partition_index=i, timestamp=LATEST) for i in range(partitions)
                ),
            )
            for n in names
        ),
    )
    deadline = time.monotonic() + timeout
    while True:
        topics = peer.call(request).topics
        if all(
            t.error_code == ErrorCode.none
            and len(t.partitions) == partitions
            and all(p.leader_id >= 0 and p.error_code == ErrorCode.none for p in t.partitions)
            for t in topics
        ) and all(p.error_code == ErrorCode.none for t in peer.call(listing).topics for p in t.partitions):
            return
        assert time.monotonic() < deadline, topics
        time.sleep(0.05)


def ready_coordinators(peer: Peer, timeout: float = 60) -> None:
    """Until the group and transaction coordinators answer: Kafka creates and loads __consumer_offsets
    and __transaction_state on first use, answering NOT_COORDINATOR meanwhile."""
    deadline = time.monotonic() + timeout
    for key_type in (0, 1):
        while True:
            found = peer.call(FindCoordinatorRequest(key_type=key_type, coordinator_keys=("warm-up",)))
            if found.coordinators[0].error_code == ErrorCode.none:
                break
            assert time.monotonic() < deadline, found
            time.sleep(0.1)
    while True:
        offsets = peer.call(
            OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id="warm-up", topics=None),))
        )
        ids = peer.call(
            InitProducerIdRequest(
                transactional_id="warm-up", transaction_timeout=datetime.timedelta(seconds=60)
            )
        )
        if offsets.groups[0].error_code == ErrorCode.none and ids.error_code == ErrorCode.none:
            return
        assert time.monotonic() < deadline, (offsets, ids)
        time.sleep(0.1)


def list_offsets(peer: Peer, topic: str, *stamps: int, isolation: int = 0) -> list[Any]:
    """Partition 0's answer to each query, one request each (a request may name a partition once)."""
    return [listing(peer, topic, [stamp], isolation)[0] for stamp in stamps]


def listing(peer: Peer, topic: str, stamps: list[int], isolation: int = 0) -> list[Any]:
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation,
        topics=(
            ListOffsetsTopic(
                name=topic,
                partitions=tuple(ListOffsetsPartition(partition_index=0, timestamp=s) for s in stamps),
            ),
        ),
    )
    return plain(peer.call(request))["topics"][0]["partitions"]  # type: ignore[no-any-return]

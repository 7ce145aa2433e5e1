"""The Kafka side of the console: one AdminClient per logged-in user, and the calls the pages make with
it. The calls themselves are schooner/ops/kafka's (shared with the CLI); this adds what only a page
needs (the cluster's brokers, the login check). Blocking: the pages call it in a thread
(run_in_threadpool).

Every broker refusal is a KafkaFailure whose text and `code` name Kafka's error
(TOPIC_AUTHORIZATION_FAILED, ...), which the pages show as a message.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, OffsetSpec

from ..client_options import ClientSettings
from ..kafka import KafkaFailure, build, describe, failure, quiet, result
from ..kafka import acls as kafka_acls
from ..kafka import groups as kafka_groups
from ..kafka import topics as kafka_topics
from ..kafka.acls import AclRow
from ..kafka.groups import Group, GroupListing
from ..kafka.tiers import tier_offsets

TP = tuple[str, int]

__all__ = ["TP", "AclRow", "Group", "GroupListing", "KafkaFailure", "KafkaSide"]


@dataclass(frozen=True)
class BrokerNode:
    id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class ClusterInfo:
    cluster_id: str | None
    controller_id: int | None
    brokers: list[BrokerNode]


@dataclass(frozen=True)
class PartitionMeta:
    id: int
    leader: int
    replicas: list[int]


@dataclass(frozen=True)
class TopicMeta:
    name: str
    partitions: list[PartitionMeta]
    error: str | None = None


def _topic_meta(name: str, t: Any) -> TopicMeta:
    parts = [PartitionMeta(p.id, p.leader, list(p.replicas)) for p in t.partitions.values()]
    error = describe(t.error) if t.error is not None else None
    return TopicMeta(name, sorted(parts, key=lambda p: p.id), error)


class KafkaSide:
    """One user's AdminClient (made on first use), and the settings its consumers and producers share."""

    def __init__(self, client: ClientSettings) -> None:
        self.client = client
        self.timeout_s = client.timeout_s
        self._admin: AdminClient | None = None
        self._lock = threading.Lock()
        # What librdkafka reported outside any call (login failures); bounded, as it repeats while down.
        self.errors: deque[KafkaError] = deque(maxlen=20)

    def conf(self) -> dict[str, Any]:
        conf = quiet(self.client.librdkafka())
        remember = conf["error_cb"]

        def report(error: KafkaError) -> None:
            self.errors.append(error)
            remember(error)

        return {**conf, "error_cb": report}

    @property
    def admin(self) -> AdminClient:
        with self._lock:
            if self._admin is None:
                self._admin = build(AdminClient, self.conf())
            return self._admin

    def close(self) -> None:
        self._admin = None  # librdkafka closes the client's connections when it is collected

    # -- login ----------------------------------------------------------------------------------------
    def check_login(self) -> str | None:
        """None when the broker accepts these credentials; else why not (its authentication error)."""
        admin = self.admin
        future = admin.describe_cluster(request_timeout=self.timeout_s)
        while not future.done():
            admin.poll(0.1)
            failed = [e for e in self.errors if e.code() == KafkaError._AUTHENTICATION]
            if failed:
                return str(failed[0].str())
        try:
            future.result()
        except Exception as exc:
            return str(failure(exc, self.client))
        return None

    # -- cluster and topics ---------------------------------------------------------------------------
    def cluster(self) -> ClusterInfo:
        found = result(self.admin.describe_cluster(request_timeout=self.timeout_s), self.client)
        nodes = [BrokerNode(n.id, n.host, n.port, n.rack) for n in found.nodes]
        controller = found.controller.id if found.controller is not None else None
        return ClusterInfo(found.cluster_id, controller, sorted(nodes, key=lambda n: n.id))

    def topics(self) -> list[TopicMeta]:
        meta = kafka_topics.cluster(self.admin, self.client)
        return [_topic_meta(name, t) for name, t in sorted(meta.topics.items())]

    def topic(self, name: str) -> TopicMeta:
        return _topic_meta(name, kafka_topics.topic_metadata(self.admin, name, self.client))

    def offsets(self, partitions: Iterable[TP], spec: Any) -> dict[TP, int]:
        """ListOffsets for many partitions at once: OffsetSpec.earliest(), latest() or for_timestamp(ms)."""
        return kafka_topics.offsets_at(self.admin, self.client, partitions, spec)

    def earliest(self, partitions: Iterable[TP]) -> dict[TP, int]:
        return self.offsets(partitions, OffsetSpec.earliest())

    def latest(self, partitions: Iterable[TP]) -> dict[TP, int]:
        return self.offsets(partitions, OffsetSpec.latest())

    def tiers(self, topic: str, partitions: list[int]) -> dict[int, tuple[int, int]]:
        """A tiered topic's partitions: (where Redis starts, the first offset not archived yet)."""
        return tier_offsets(self.client, topic, partitions)

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        kafka_topics.create(self.client, name, partitions, configs, admin=self.admin)

    def delete_topic(self, name: str) -> None:
        kafka_topics.delete(self.client, name, admin=self.admin)

    def topic_configs(self, name: str) -> list[dict[str, Any]]:
        return kafka_topics.topic_configs(self.admin, self.client, name)

    def alter_topic_config(self, name: str, key: str, value: str | None) -> None:
        """Sets one config, or with value None removes the topic's override (back to the default)."""
        sets, deletes = ({}, [key]) if value is None else ({key: value}, [])
        kafka_topics.alter(self.client, name, sets, deletes, None, admin=self.admin)

    # -- groups (of every type: share groups too) -----------------------------------------------------
    def groups(self) -> list[GroupListing]:
        return kafka_groups.list_groups(self.client, self.admin)

    def describe_group(self, group_id: str) -> Group:
        return kafka_groups.describe_group(self.client, group_id)

    def committed(self, group_id: str) -> dict[TP, int]:
        found = kafka_groups.committed_offsets(self.admin, self.client, group_id)
        return {tp: offset for tp, offset in found.items() if offset is not None and offset >= 0}

    # -- users and ACLs -------------------------------------------------------------------------------
    def users(self) -> dict[str, list[tuple[str, int]]]:
        return kafka_acls.users(self.admin, self.client)

    def security_enabled(self) -> bool:
        return kafka_acls.security_enabled(self.admin, self.client)

    def acls(self) -> list[AclRow]:
        return kafka_acls.acls(self.admin, self.client)

    def create_acl(self, row: AclRow) -> None:
        kafka_acls.create_acl(self.admin, self.client, row)

    def delete_acl(self, row: AclRow) -> int:
        return kafka_acls.delete_acl(self.admin, self.client, row)

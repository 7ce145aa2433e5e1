"""The Kafka side of the console: cluster, topics, configs, groups, users and ACLs through confluent-kafka's
AdminClient, as the logged-in user. Blocking: the pages call it in a thread (run_in_threadpool).

Every broker refusal becomes a BrokerError whose text names Kafka's error (TOPIC_AUTHORIZATION_FAILED,
...), which the pages show as a message.
"""

from __future__ import annotations

import threading
import uuid
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)
from confluent_kafka.admin import AclBindingFilter as _AclBindingFilter

from ..client_options import ClientSettings

AclBindingFilter: Any = _AclBindingFilter  # its stubs want str where Kafka's filters take None (any)

TP = tuple[str, int]


class BrokerError(Exception):
    """A refusal or failure of a Kafka call, in words for the page; `code` is Kafka's error name."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


def _error_of(exc: BaseException, timeout_s: float) -> BrokerError:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err: KafkaError = exc.args[0]
        return BrokerError(f"{err.name()}: {err.str()}", err.name())
    if isinstance(exc, TimeoutError):
        return BrokerError(f"the broker did not answer within {timeout_s:g} s", "_TIMED_OUT")
    return BrokerError(f"{type(exc).__name__}: {exc}")


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


@dataclass(frozen=True)
class ConfigRow:
    name: str
    value: str | None
    is_default: bool
    read_only: bool
    sensitive: bool
    source: str


@dataclass(frozen=True)
class GroupRow:
    id: str
    type: str  # classic, consumer, or unknown (librdkafka does not name share groups)
    state: str


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    assignment: list[TP]
    instance_id: str | None = None


@dataclass(frozen=True)
class GroupDetail:
    id: str
    type: str
    state: str
    assignor: str
    coordinator: int | None
    members: list[Member] = field(default_factory=list)


@dataclass(frozen=True)
class AclRow:
    resource_type: str
    name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


def _name(value: Any) -> str:
    return str(getattr(value, "name", value))


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
        return {**self.client.librdkafka(), "error_cb": self.errors.append}

    @property
    def admin(self) -> AdminClient:
        with self._lock:
            if self._admin is None:
                self._admin = AdminClient(self.conf())
            return self._admin

    def close(self) -> None:
        self._admin = None  # librdkafka closes the client's connections when it is collected

    def wait(self, future: Future[Any]) -> Any:
        try:
            return future.result(self.timeout_s + 1)
        except Exception as exc:
            raise _error_of(exc, self.timeout_s) from None

    def wait_all(self, futures: dict[Any, Future[Any]]) -> dict[Any, Any]:
        return {key: self.wait(f) for key, f in futures.items()}

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
            return str(_error_of(exc, self.timeout_s))
        return None

    # -- cluster and topics ---------------------------------------------------------------------------
    def cluster(self) -> ClusterInfo:
        result = self.wait(self.admin.describe_cluster(request_timeout=self.timeout_s))
        nodes = [BrokerNode(n.id, n.host, n.port, n.rack) for n in result.nodes]
        controller = result.controller.id if result.controller is not None else None
        return ClusterInfo(result.cluster_id, controller, sorted(nodes, key=lambda n: n.id))

    def topics(self) -> list[TopicMeta]:
        try:
            meta = self.admin.list_topics(timeout=self.timeout_s)
        except Exception as exc:
            raise _error_of(exc, self.timeout_s) from None
        out = []
        for name, t in sorted(meta.topics.items()):
            parts = [PartitionMeta(p.id, p.leader, list(p.replicas)) for p in t.partitions.values()]
            error = f"{t.error.name()}: {t.error.str()}" if t.error is not None else None
            out.append(TopicMeta(name, sorted(parts, key=lambda p: p.id), error))
        return out

    def topic(self, name: str) -> TopicMeta:
        try:
            meta = self.admin.list_topics(topic=name, timeout=self.timeout_s)
        except Exception as exc:
            raise _error_of(exc, self.timeout_s) from None
        t = meta.topics.get(name)
        if t is None or t.error is not None:
            err = t.error if t is not None else None
            raise BrokerError(
                f"{err.name()}: {err.str()}" if err else f"no topic {name}", err.name() if err else ""
            )
        parts = [PartitionMeta(p.id, p.leader, list(p.replicas)) for p in t.partitions.values()]
        return TopicMeta(name, sorted(parts, key=lambda p: p.id))

    def offsets(self, partitions: Iterable[TP], spec: Any) -> dict[TP, int]:
        """ListOffsets for many partitions at once: OffsetSpec.earliest(), latest() or for_timestamp(ms)."""
        wanted = {TopicPartition(t, p): spec for t, p in partitions}
        if not wanted:
            return {}
        futures = self.admin.list_offsets(wanted, request_timeout=self.timeout_s)
        return {(tp.topic, tp.partition): r.offset for tp, r in self.wait_all(futures).items()}

    def earliest(self, partitions: Iterable[TP]) -> dict[TP, int]:
        return self.offsets(partitions, OffsetSpec.earliest())

    def latest(self, partitions: Iterable[TP]) -> dict[TP, int]:
        return self.offsets(partitions, OffsetSpec.latest())

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        new = NewTopic(name, num_partitions=partitions, config=configs)
        self.wait(self.admin.create_topics([new], request_timeout=self.timeout_s)[name])

    def delete_topic(self, name: str) -> None:
        self.wait(self.admin.delete_topics([name], request_timeout=self.timeout_s)[name])

    def topic_configs(self, name: str) -> list[ConfigRow]:
        resource = ConfigResource(ResourceType.TOPIC, name)
        (entries,) = self.wait_all(self.admin.describe_configs([resource])).values()
        return [
            ConfigRow(e.name, e.value, e.is_default, e.is_read_only, e.is_sensitive, _name(e.source))
            for _, e in sorted(entries.items())
        ]

    def alter_topic_config(self, name: str, key: str, value: str | None) -> None:
        """Sets one config, or with value None removes the topic's override (back to the default)."""
        op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
        entry = ConfigEntry(key, value, incremental_operation=op)
        resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=[entry])
        self.wait_all(self.admin.incremental_alter_configs([resource]))

    # -- groups ---------------------------------------------------------------------------------------
    def groups(self) -> list[GroupRow]:
        result = self.wait(self.admin.list_consumer_groups(request_timeout=self.timeout_s))
        if result.errors:
            raise _error_of(result.errors[0], self.timeout_s)
        rows = [GroupRow(g.group_id, _name(g.type).lower(), _name(g.state).title()) for g in result.valid]
        return sorted(rows, key=lambda g: g.id)

    def describe_group(self, group_id: str) -> GroupDetail:
        futures = self.admin.describe_consumer_groups([group_id], request_timeout=self.timeout_s)
        d = self.wait(futures[group_id])
        members = [
            Member(
                m.member_id, m.client_id, m.host,
                sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions or [])),
                m.group_instance_id,
            )
            for m in d.members
        ]  # fmt: skip
        coordinator = d.coordinator.id if d.coordinator is not None else None
        kind = _name(d.type).lower()
        return GroupDetail(group_id, kind, _name(d.state).title(), d.partition_assignor, coordinator, members)

    def committed(self, group_id: str) -> dict[TP, int]:
        request = [ConsumerGroupTopicPartitions(group_id)]
        futures = self.admin.list_consumer_group_offsets(request, request_timeout=self.timeout_s)
        result = self.wait(futures[group_id])
        return {
            (tp.topic, tp.partition): tp.offset
            for tp in result.topic_partitions
            if tp.error is None and tp.offset >= 0
        }

    def reset_offsets(self, group_id: str, targets: dict[TP, int]) -> None:
        tps = [TopicPartition(t, p, o) for (t, p), o in sorted(targets.items())]
        request = [ConsumerGroupTopicPartitions(group_id, tps)]
        futures = self.admin.alter_consumer_group_offsets(request, request_timeout=self.timeout_s)
        result = self.wait(futures[group_id])
        failed = [tp for tp in result.topic_partitions if tp.error is not None]
        if failed:
            err = failed[0].error
            raise BrokerError(f"{err.name()}: {err.str()}", err.name())

    # -- users and ACLs -------------------------------------------------------------------------------
    def users(self) -> dict[str, list[tuple[str, int]]]:
        """SCRAM users: name -> [(mechanism, iterations)]."""
        future: Any = self.admin.describe_user_scram_credentials(request_timeout=self.timeout_s)
        described = self.wait(future)
        return {
            user: [(_name(c.mechanism).replace("_", "-"), c.iterations) for c in d.scram_credential_infos]
            for user, d in sorted(described.items())
        }

    def security_enabled(self) -> bool:
        """Whether the broker has an authorizer. librdkafka drops DescribeAcls' top-level error, so this
        asks DeleteAcls with a filter that can match no binding: SECURITY_DISABLED means none."""
        probe = AclBindingFilter(
            ResourceType.TOPIC, f"schooner-console-probe-{uuid.uuid4().hex}", ResourcePatternType.LITERAL,
            f"User:{uuid.uuid4().hex}", None, AclOperation.ANY, AclPermissionType.ANY,
        )  # fmt: skip
        (future,) = self.admin.delete_acls([probe], request_timeout=self.timeout_s).values()
        try:
            self.wait(future)
        except BrokerError as exc:
            return exc.code != "SECURITY_DISABLED"
        return True

    def acls(self) -> list[AclRow]:
        everything = AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        found = self.wait(self.admin.describe_acls(everything, request_timeout=self.timeout_s))
        rows = [
            AclRow(_name(b.restype), b.name, _name(b.resource_pattern_type), b.principal, b.host,
                   _name(b.operation), _name(b.permission_type))
            for b in found
        ]  # fmt: skip
        return sorted(rows, key=lambda r: (r.resource_type, r.name, r.principal, r.operation))

    def create_acl(self, row: AclRow) -> None:
        (future,) = self.admin.create_acls([_binding(row)], request_timeout=self.timeout_s).values()
        self.wait(future)

    def delete_acl(self, row: AclRow) -> int:
        exact = AclBindingFilter(
            ResourceType[row.resource_type], row.name, ResourcePatternType[row.pattern_type], row.principal,
            row.host, AclOperation[row.operation], AclPermissionType[row.permission],
        )  # fmt: skip
        (future,) = self.admin.delete_acls([exact], request_timeout=self.timeout_s).values()
        return len(self.wait(future))


def _binding(row: AclRow) -> AclBinding:
    try:
        return AclBinding(
            ResourceType[row.resource_type], row.name, ResourcePatternType[row.pattern_type], row.principal,
            row.host, AclOperation[row.operation], AclPermissionType[row.permission],
        )  # fmt: skip
    except (KeyError, ValueError, TypeError) as exc:
        raise BrokerError(f"not a valid ACL: {exc}") from None

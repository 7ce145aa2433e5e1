"""The settings one share group runs with: its share.* group configs (IncrementalAlterConfigs on the GROUP
resource) over the broker's group.share.* defaults (Settings.share_*). Pure: no Redis here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ....config import Settings

LATEST = "latest"
EARLIEST = "earliest"
READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    auto_offset_reset: str  # share.auto.offset.reset: latest, earliest or by_duration:<ISO 8601>
    isolation_level: str  # share.isolation.level
    record_lock_duration_ms: int  # share.record.lock.duration.ms
    delivery_count_limit: int  # share.delivery.count.limit
    partition_max_record_locks: int  # share.partition.max.record.locks: the in-flight window
    session_timeout_ms: int  # share.session.timeout.ms
    heartbeat_interval_ms: int  # share.heartbeat.interval.ms
    dlq_topic: str  # errors.deadletterqueue.topic.name; "" when the group has none
    dlq_copy_record: bool  # errors.deadletterqueue.copy.record.enable

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == READ_COMMITTED


def share_group_config(overrides: Mapping[str, str], settings: Settings) -> ShareGroupConfig:
    """The group's configs, each one its override if set (already validated when stored), else the
    broker's default."""

    def num(name: str, default: int) -> int:
        value = overrides.get(name)
        return int(value) if value not in (None, "") else default

    return ShareGroupConfig(
        auto_offset_reset=overrides.get("share.auto.offset.reset") or LATEST,
        isolation_level=overrides.get("share.isolation.level") or READ_UNCOMMITTED,
        record_lock_duration_ms=num("share.record.lock.duration.ms", settings.share_record_lock_duration_ms),
        delivery_count_limit=num("share.delivery.count.limit", settings.share_delivery_count_limit),
        partition_max_record_locks=num(
            "share.partition.max.record.locks", settings.share_partition_max_record_locks
        ),
        session_timeout_ms=num("share.session.timeout.ms", settings.share_session_timeout_ms),
        heartbeat_interval_ms=num("share.heartbeat.interval.ms", settings.share_heartbeat_interval_ms),
        dlq_topic=overrides.get("errors.deadletterqueue.topic.name") or "",
        dlq_copy_record=(overrides.get("errors.deadletterqueue.copy.record.enable") or "").lower() == "true",
    )

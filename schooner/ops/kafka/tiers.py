"""A tiered topic's two tiers as `schooner topics describe` shows them, through ListOffsets' special
timestamps: -4 (earliest local, KIP-405) is where Redis starts, -6 (earliest pending upload, KIP-1023)
the first offset not yet in the cold tier. librdkafka's admin API has neither (its OffsetSpec knows
earliest, latest and max timestamp only), so the request goes through wire.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v11.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic

from ...protocol.apis import ApiKey
from ...protocol.messages import make
from ..client_options import ClientSettings
from . import KafkaFailure
from .wire import Connection, WireClient

EARLIEST_LOCAL = -4
EARLIEST_PENDING_UPLOAD = -6
_VERSION = 11  # the first with -6


def tier_offsets(
    settings: ClientSettings, topic: str, partitions: Sequence[int]
) -> dict[int, tuple[int, int]]:
    """Per partition: (the Redis start, the first offset not archived yet)."""
    with WireClient(settings) as wire:
        broker = wire.any_broker()
        broker.version_of(ApiKey.LIST_OFFSETS, (_VERSION,))  # fails clearly on a broker without it
        local = _list(broker, topic, partitions, EARLIEST_LOCAL, settings)
        pending = _list(broker, topic, partitions, EARLIEST_PENDING_UPLOAD, settings)
    return {p: (local[p], pending[p]) for p in partitions}


def _list(
    broker: Connection, topic: str, partitions: Sequence[int], timestamp: int, settings: ClientSettings
) -> dict[int, int]:
    body = make(
        ListOffsetsRequest,
        replica_id=-1,
        isolation_level=0,
        timeout=timedelta(milliseconds=int(settings.timeout_s * 1000)),
        topics=(
            make(
                ListOffsetsTopic,
                name=topic,
                partitions=tuple(
                    make(
                        ListOffsetsPartition,
                        partition_index=p,
                        current_leader_epoch=-1,
                        timestamp=timestamp,
                    )
                    for p in partitions
                ),
            ),
        ),
    )
    response = broker.call(body)
    found: dict[int, int] = {}
    for t in response.topics:
        for p in t.partitions:
            if p.error_code != ErrorCode.none:
                where = f"{topic}-{p.partition_index}"
                raise KafkaFailure(
                    f"ListOffsets {timestamp} of {where}: {p.error_code.name}", p.error_code.name
                )
            found[p.partition_index] = p.offset
    return found

"""A share-group member (KIP-932): confluent-kafka's ShareConsumer in explicit acknowledgement mode.
Each poll is a `poll` op; its records are accepted (a few released, to exercise redelivery) and
committed with commit_sync, whose answer per partition says which acknowledgements the broker took:
one `ack` op per partition and type, ok or fail by that answer, unknown when the call itself failed."""

from __future__ import annotations

from typing import Any

from confluent_kafka import AcknowledgeType, IllegalStateException, KafkaException, ShareConsumer

from ..history import Status
from .base import Workload, record_of

POLL_S = 0.5
COMMIT_TIMEOUT_S = 10.0
TYPES = {AcknowledgeType.ACCEPT: "accept", AcknowledgeType.RELEASE: "release"}


class ShareMember(Workload):
    """options: group, topics, release_every (one record in that many is released, 0: never)."""

    def session(self) -> None:
        group: str = self.options["group"]
        release_every = int(self.options.get("release_every", 20))
        member = self.new_instance()
        self.new_session(member)  # a share member's records are not a continuous read
        session = self.session_id
        consumer = ShareConsumer(
            self.confluent_config(
                **{"group.id": group, "client.id": member, "share.acknowledgement.mode": "explicit"}
            )
        )
        try:
            consumer.subscribe(list(self.options["topics"]))
            while not self.stopping:
                start = self.history.now()
                messages = consumer.poll(POLL_S)
                # (topic, partition, type) -> [topic, partition, offset, value, delivery count]
                acks: dict[tuple[str, int, str], list[list[Any]]] = {}
                records = []
                for m in messages:
                    if m.error() is not None:
                        self.error(f"poll: {m.error()}")
                        continue
                    record = record_of(m)
                    records.append(record)
                    kind = AcknowledgeType.ACCEPT
                    if release_every and self.rng.randrange(release_every) == 0:
                        kind = AcknowledgeType.RELEASE
                    try:
                        consumer.acknowledge(m, kind)
                    except (IllegalStateException, KafkaException) as exc:  # its lock is gone: redelivered
                        self.error(f"acknowledge: {exc}")
                        continue
                    acks.setdefault((record[0], record[1], TYPES[kind]), []).append(
                        [*record, m.delivery_count()]
                    )
                if not records:
                    continue
                self.record(
                    "poll",
                    "ok",
                    start,
                    mode="share",
                    group=group,
                    member=member,
                    isolation="read_uncommitted",
                    session=session,
                    records=records,
                )
                self._commit(consumer, group, member, acks)
        finally:
            try:
                consumer.close()
            except (KafkaException, RuntimeError) as exc:
                self.error(f"close: {exc}")

    def _commit(
        self,
        consumer: ShareConsumer,
        group: str,
        member: str,
        acks: dict[tuple[str, int, str], list[list[Any]]],
    ) -> None:
        start = self.history.now()
        answered: dict[tuple[str, int], str | None] = {}
        failed: str | None = None
        try:
            for tp, outcome in (consumer.commit_sync(COMMIT_TIMEOUT_S) or {}).items():
                answered[(tp.topic, tp.partition)] = None if outcome is None else str(outcome)
        except KafkaException as exc:
            failed = str(exc)
            self.error(f"commit_sync: {exc}")
        for (topic, partition, kind), records in acks.items():
            status: Status = "unknown"  # the call failed, or its answer left the partition out
            error = failed
            if (topic, partition) in answered:
                error = answered[(topic, partition)]
                status = "ok" if error is None else "fail"
            self.record(
                "ack", status, start, group=group, member=member, records=records, type=kind, error=error
            )

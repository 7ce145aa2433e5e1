"""The workloads of a chaos run: real clients, each a thread recording its operations in the history
(see chaos/history.py for what each op holds). plan() picks a run's set; setup_topics() creates their
topics before it and final_reads() reads the logs back after it."""

from __future__ import annotations

import random

from ..history import History
from .base import Workload
from .consumers import GroupConsumer, OffsetsObserver, Reader
from .final import LOG, SHARE, SHARE_GROUP, TIERED, TOPICS, TXN_IN, TXN_OUT, final_reads, setup_topics
from .producers import IdempotentProducer, KafkaPythonProducer, TransactionalProducer
from .share import ShareMember
from .transform import TransactionalTransform

__all__ = [
    "GroupConsumer",
    "IdempotentProducer",
    "KafkaPythonProducer",
    "OffsetsObserver",
    "Reader",
    "ShareMember",
    "TransactionalProducer",
    "TransactionalTransform",
    "Workload",
    "final_reads",
    "plan",
    "setup_topics",
    "TOPICS",
    "LOG",
    "TIERED",
    "TXN_IN",
    "TXN_OUT",
    "SHARE",
    "GROUPS",
    "TRANSFORM_GROUP",
]

CLASSIC_GROUP, CONSUMER_GROUP, TRANSFORM_GROUP = "chaos-classic", "chaos-kip848", "chaos-transform"
GROUPS = (CLASSIC_GROUP, CONSUMER_GROUP, TRANSFORM_GROUP)


def _parts(topic: str) -> list[int]:
    return list(range(TOPICS[topic][0]))


def plan(bootstrap: str, history: History, seed: int, scale: float = 1.0) -> list[Workload]:
    """The workloads of a run, not started. `scale` multiplies the produce rates; below 1 the groups
    and the transform have fewer members, for a small machine or a short test."""
    rng = random.Random(seed)
    members = 2 if scale >= 1 else 1
    out: list[Workload] = []

    def add(cls: type[Workload], name: str, **options: object) -> None:
        out.append(cls(name, bootstrap, history, rng.randrange(2**32), **options))

    add(IdempotentProducer, "producer-log", topic=LOG, partitions=_parts(LOG), rate=200 * scale)
    add(IdempotentProducer, "producer-tiered", topic=TIERED, partitions=_parts(TIERED), rate=100 * scale)
    add(IdempotentProducer, "producer-share", topic=SHARE, partitions=_parts(SHARE), rate=40 * scale)
    add(KafkaPythonProducer, "producer-txn-in", topic=TXN_IN, partitions=_parts(TXN_IN), rate=40 * scale)
    add(
        TransactionalProducer,
        "txn-producer",
        topic=TXN_IN,
        partitions=_parts(TXN_IN),
        rate=5 * scale,
        transactional_id="chaos-txn-producer",
        abort_every=4,
    )
    for i in range(members):
        add(
            TransactionalTransform,
            f"transform-{i}",
            source=TXN_IN,
            sink=TXN_OUT,
            group=TRANSFORM_GROUP,
            transactional_id=f"chaos-transform-{i}",
        )
    for i in range(members):
        add(GroupConsumer, f"classic-{i}", group=CLASSIC_GROUP, topics=[LOG], protocol="classic")
        add(GroupConsumer, f"kip848-{i}", group=CONSUMER_GROUP, topics=[LOG], protocol="consumer")
    add(OffsetsObserver, "offsets-observer", groups=list(GROUPS), interval=0.5)
    for i in range(2):
        add(ShareMember, f"share-{i}", group=SHARE_GROUP, topics=[SHARE])
    add(Reader, "reader-tiers", topics=[TIERED, LOG], isolation="read_uncommitted", pass_s=20)
    add(Reader, "reader-committed", topics=[TXN_IN], isolation="read_committed", pass_s=20)
    add(
        Reader,
        "reader-kafka-python",
        topics=[TIERED],
        isolation="read_uncommitted",
        pass_s=20,
        client="kafka-python",
    )
    return out

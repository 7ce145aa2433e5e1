"""A streams group's topology (KIP-1071) and what it takes to run it, as pure data and rules.

A Kafka Streams member sends its topology when it joins: subtopologies, each reading source topics
(or repartition topics other subtopologies write) and keeping state in changelog topics. The broker
works out how many tasks each subtopology has (the most partitions among its inputs), how many
partitions its internal topics need, and which of them are still to be created; until every source
topic exists and every internal topic is there with the right partition count the group is not ready
and gets no tasks. Repartition topics with no count of their own take their writers' task counts,
and topics of a copartition group must agree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any


class Status(IntEnum):
    """StreamsGroupHeartbeatResponse's status codes."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5
    MISSING_CLIENT_TAGS = 6


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """A repartition or changelog topic; partitions 0 means "whatever the topology needs"."""

    name: str
    partitions: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    id: str
    sources: tuple[str, ...] = ()
    source_regexes: tuple[str, ...] = ()
    repartition_sinks: tuple[str, ...] = ()
    repartition_sources: tuple[InternalTopic, ...] = ()
    changelogs: tuple[InternalTopic, ...] = ()
    copartition_groups: tuple[tuple[str, ...], ...] = ()  # topic names that must be co-partitioned


@dataclass(frozen=True, slots=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]

    def to_saved(self) -> str:
        return json.dumps(
            {
                "epoch": self.epoch,
                "subtopologies": [
                    {
                        "id": s.id,
                        "sources": list(s.sources),
                        "source_regexes": list(s.source_regexes),
                        "repartition_sinks": list(s.repartition_sinks),
                        "repartition_sources": [_saved_topic(t) for t in s.repartition_sources],
                        "changelogs": [_saved_topic(t) for t in s.changelogs],
                        "copartition_groups": [list(g) for g in s.copartition_groups],
                    }
                    for s in self.subtopologies
                ],
            },
            sort_keys=True,
        )

    @classmethod
    def from_saved(cls, text: str) -> Topology:
        data = json.loads(text)
        return cls(
            int(data["epoch"]),
            tuple(
                Subtopology(
                    s["id"],
                    tuple(s["sources"]),
                    tuple(s["source_regexes"]),
                    tuple(s["repartition_sinks"]),
                    tuple(_loaded_topic(t) for t in s["repartition_sources"]),
                    tuple(_loaded_topic(t) for t in s["changelogs"]),
                    tuple(tuple(g) for g in s["copartition_groups"]),
                )
                for s in data["subtopologies"]
            ),
        )


def _saved_topic(t: InternalTopic) -> dict[str, Any]:
    return {"name": t.name, "partitions": t.partitions, "configs": [list(c) for c in t.configs]}


def _loaded_topic(data: Mapping[str, Any]) -> InternalTopic:
    return InternalTopic(data["name"], int(data["partitions"]), tuple((k, v) for k, v in data["configs"]))


def invalid(topology: Topology) -> str | None:
    """Why the topology cannot be served (INVALID_REQUEST), or None."""
    ids = [s.id for s in topology.subtopologies]
    if len(set(ids)) != len(ids):
        return "Subtopology IDs must be unique."
    for s in topology.subtopologies:
        for pattern in s.source_regexes:
            try:
                re.compile(pattern)
            except re.error as exc:
                return f"Source topic regex {pattern!r} is not a valid regular expression: {exc}."
    written = {t for s in topology.subtopologies for t in s.repartition_sinks}
    read = {t.name for s in topology.subtopologies for t in s.repartition_sources}
    if written - read:
        return f"Repartition sink topics {sorted(written - read)} are not read by any subtopology."
    return None


@dataclass(frozen=True, slots=True)
class Configured:
    """What the topology needs of the cluster as it is now."""

    tasks: dict[str, int] = field(default_factory=dict)  # subtopology id -> its task count
    missing_sources: tuple[str, ...] = ()
    to_create: tuple[InternalTopic, ...] = ()  # internal topics with the partition count they need
    misfits: tuple[str, ...] = ()  # why topics are incorrectly partitioned
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)  # subtopology -> its input topics

    @property
    def ready(self) -> bool:
        return not (self.missing_sources or self.to_create or self.misfits)

    def statuses(self) -> list[tuple[Status, str]]:
        found = []
        if self.missing_sources:
            found.append(
                (
                    Status.MISSING_SOURCE_TOPICS,
                    f"Source topics {', '.join(self.missing_sources)} are missing.",
                )
            )
        if self.misfits:
            found.append((Status.INCORRECTLY_PARTITIONED_TOPICS, " ".join(self.misfits)))
        if self.to_create:
            names = ", ".join(t.name for t in self.to_create)
            found.append((Status.MISSING_INTERNAL_TOPICS, f"Internal topics are missing: [{names}]"))
        return found


def configure(
    topology: Topology, partitions_of: Callable[[str], int | None], names: Iterable[str] = ()
) -> Configured:
    """Task counts and internal topics for the topology, given the partition counts of the topics
    that exist (`partitions_of`; None for a topic that does not) and every topic name (for regexes)."""
    internal = {t.name: t for s in topology.subtopologies for t in (*s.repartition_sources, *s.changelogs)}
    all_names = sorted(set(names))
    inputs: dict[str, tuple[str, ...]] = {}
    missing: set[str] = set()
    counts: dict[str, int] = {}  # topic -> its partition count, as known so far
    for s in topology.subtopologies:
        matched = [n for n in all_names for p in s.source_regexes if re.fullmatch(p, n) and n not in internal]
        sources = tuple(dict.fromkeys((*s.sources, *matched)))
        inputs[s.id] = (*sources, *(t.name for t in s.repartition_sources))
        for name in sources:
            found = partitions_of(name)
            if found is None:
                missing.add(name)
            else:
                counts[name] = found
    for t in internal.values():
        if t.partitions > 0:
            counts[t.name] = t.partitions
    writers = {t: [s.id for s in topology.subtopologies if t in s.repartition_sinks] for t in internal}
    tasks: dict[str, int] = {}
    changed = True
    while changed:  # repartition counts flow from their writers' tasks; copartitioned topics agree
        changed = False
        for s in topology.subtopologies:
            known = [counts[n] for n in inputs[s.id] if n in counts]
            if known and tasks.get(s.id) != max(known):
                tasks[s.id] = max(known)
                changed = True
            for group in s.copartition_groups:
                fixed = [counts[n] for n in group if n in counts and n not in internal]
                for n in group:
                    if fixed and n in internal and n not in counts:
                        counts[n] = max(fixed)
                        changed = True
        for name, by in writers.items():
            if name not in counts and by and all(w in tasks for w in by):
                counts[name] = max(tasks[w] for w in by)
                changed = True
    misfits = []
    for s in topology.subtopologies:
        for group in s.copartition_groups:
            seen = {n: counts[n] for n in group if n in counts}
            if len(set(seen.values())) > 1:
                misfits.append(f"Following topics are not copartitioned: {seen}.")
        for t in s.changelogs:
            if s.id in tasks:
                counts.setdefault(t.name, tasks[s.id])
    to_create = []
    for t in internal.values():
        if t.name not in counts:
            continue  # its count waits on a missing source topic
        existing = partitions_of(t.name)
        if existing is None:
            to_create.append(InternalTopic(t.name, counts[t.name], t.configs))
        elif existing != counts[t.name]:
            misfits.append(f"Internal topic {t.name} has {existing} partitions, {counts[t.name]} are needed.")
    return Configured(
        tasks={s: n for s, n in tasks.items() if n > 0} if not missing else {},
        missing_sources=tuple(sorted(missing)),
        to_create=tuple(sorted(to_create, key=lambda t: t.name)),
        misfits=tuple(misfits),
        sources=inputs,
    )

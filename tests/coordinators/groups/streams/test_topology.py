"""A streams group's topology configured against the topics as they are: task counts, the partition
counts of internal topics, what is missing, and what is partitioned wrong."""

from __future__ import annotations

from schooner.coordinators.groups.streams.topology import (
    InternalTopic,
    Status,
    Subtopology,
    Topology,
    configure,
    invalid,
)

COMPACT = (("cleanup.policy", "compact"),)


def orders_topology(repartition_partitions: int = 0) -> Topology:
    """Subtopology 0 reads orders and writes a repartition topic; 1 reads it with a copartitioned
    table, keeping a store."""
    by_customer = InternalTopic("app-by-customer-repartition", repartition_partitions)
    return Topology(
        0,
        (
            Subtopology("0", sources=("orders",), repartition_sinks=(by_customer.name,)),
            Subtopology(
                "1",
                sources=("customers",),
                repartition_sources=(by_customer,),
                changelogs=(InternalTopic("app-store-changelog", 0, COMPACT),),
                copartition_groups=(("customers", by_customer.name),),
            ),
        ),
    )


def test_internal_topics_take_their_counts_from_the_topics_they_come_from() -> None:
    existing = {"orders": 6, "customers": 3}
    configured = configure(orders_topology(), existing.get)
    assert configured.tasks == {"0": 6, "1": 3}, "the copartitioned table sets the repartition count"
    assert configured.to_create == (
        InternalTopic("app-by-customer-repartition", 3),
        InternalTopic("app-store-changelog", 3, COMPACT),
    )
    assert not configured.ready and [s for s, _ in configured.statuses()] == [Status.MISSING_INTERNAL_TOPICS]
    existing.update({"app-by-customer-repartition": 3, "app-store-changelog": 3})
    assert configure(orders_topology(), existing.get).ready


def test_a_repartition_topic_without_a_copartner_takes_its_writers_task_count() -> None:
    sub_writer = Subtopology("0", sources=("clicks",), repartition_sinks=("app-r-repartition",))
    sub_reader = Subtopology("1", repartition_sources=(InternalTopic("app-r-repartition"),))
    configured = configure(Topology(0, (sub_writer, sub_reader)), {"clicks": 4}.get)
    assert configured.tasks == {"0": 4, "1": 4}
    assert configured.to_create == (InternalTopic("app-r-repartition", 4),)


def test_missing_sources_and_wrong_partition_counts_are_reported() -> None:
    missing = configure(orders_topology(), {"orders": 6}.get)
    assert missing.missing_sources == ("customers",) and missing.tasks == {}
    assert missing.statuses()[0][0] == Status.MISSING_SOURCE_TOPICS
    fixed = configure(orders_topology(repartition_partitions=5), {"orders": 6, "customers": 3}.get)
    assert [s for s, _ in fixed.statuses()] == [
        Status.INCORRECTLY_PARTITIONED_TOPICS,
        Status.MISSING_INTERNAL_TOPICS,
    ]
    wrong = {"orders": 6, "customers": 3, "app-by-customer-repartition": 3, "app-store-changelog": 2}
    assert "app-store-changelog has 2 partitions, 3 are needed" in " ".join(
        configure(orders_topology(), wrong.get).misfits
    )


def test_regex_sources_match_the_topic_names() -> None:
    topology = Topology(0, (Subtopology("0", source_regexes=("logs-.*",)),))
    configured = configure(
        topology, {"logs-a": 2, "logs-b": 5, "other": 9}.get, ["logs-a", "logs-b", "other"]
    )
    assert configured.tasks == {"0": 5} and configured.sources == {"0": ("logs-a", "logs-b")}


def test_invalid_topologies() -> None:
    twice = Topology(0, (Subtopology("0", sources=("a",)), Subtopology("0", sources=("b",))))
    assert invalid(twice) == "Subtopology IDs must be unique."
    assert "not a valid regular expression" in (
        invalid(Topology(0, (Subtopology("0", source_regexes=("(",)),))) or ""
    )
    unread = Topology(0, (Subtopology("0", sources=("a",), repartition_sinks=("x-repartition",)),))
    assert invalid(unread) == "Repartition sink topics ['x-repartition'] are not read by any subtopology."
    assert invalid(orders_topology()) is None


def test_the_topology_survives_its_saved_form() -> None:
    topology = orders_topology(4)
    assert Topology.from_saved(topology.to_saved()) == topology

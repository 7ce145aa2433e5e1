"""ColdTables sends each topic's calls to the store of its table format: a Delta topic's table is Delta,
an Iceberg topic's Iceberg, and pyiceberg's store is made only when an Iceberg topic needs it."""

from __future__ import annotations

import functools

from deltalake import DeltaTable

from schooner.storage.cold.formats import ColdTables
from schooner.storage.cold.iceberg.clients import from_url
from schooner.storage.cold.location import ColdLocation
from schooner.storage.log.entry import Record


def test_each_topic_goes_to_the_store_of_its_format(make_log, tmp_path, keyspace, redis_server) -> None:
    tables = ColdTables(
        ColdLocation.from_url(str(tmp_path / "cold")),
        keyspace,
        None,
        functools.partial(from_url, redis_server.url),
    )
    delta_log = make_log("plain")
    iceberg_log = make_log("ice", **{"schooner.table.format": "iceberg"})
    for log in (delta_log, iceberg_log):
        base = log.append([Record(1_700_000_000_000 + i, None, b"v%d" % i) for i in range(5)])
        piece = log.slice(base, 10)
        assert tables.archive(log.topic, 0, piece).records == 5
        if log is delta_log:
            assert tables._iceberg is None  # no Iceberg topic yet: pyiceberg's store not made
        assert tables.archived_end(log.topic, 0) == piece.end
        assert tables.read(log.topic, 0, base, 1 << 20).entries == log.read(base, 10).entries
    assert DeltaTable(tables.table_uri(delta_log.topic)).version() >= 0
    assert tables.iceberg.catalog.table_exists(tables.iceberg.identifier(iceberg_log.topic))
    assert tables.of(iceberg_log.topic) is tables.iceberg and tables.of(delta_log.topic) is tables.delta

"""The "schooner" data source: Spark's Kafka source and sink, on the log in Redis Streams.

    spark.readStream.format("schooner").option("subscribe", "orders").load()

Spark creates DataSource objects in several processes, so nothing here connects to Redis until a
reader or writer method runs; options are parsed (and checked) when a reader or writer is made.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from . import planning
from .decoded import ReaderSchema, decode_batches, resolve_all, row_schema
from .options import SourceOptions, connection, parse_bool, parse_decodes, parse_sink, parse_source
from .reading import log_for, read_partition
from .schema import kafka_schema
from .sink import SchoonerBatchWriter, SchoonerStreamWriter, check_sink_schema
from .stream_reader import SchoonerStreamReader


class SchoonerBatchReader(DataSourceReader):
    """spark.read: the records between startingOffsets (default earliest) and endingOffsets (latest)."""

    def __init__(self, opts: SourceOptions, readers: tuple[ReaderSchema, ...] = ()) -> None:
        self.opts = opts
        self.readers = readers  # the decoded columns' reader schemas (keyFormat, valueFormat)

    def partitions(self) -> Sequence[InputPartition]:
        o = self.opts
        store = log_for(o)
        tps = planning.discover(store, o.subscription)
        bounds, ends = planning.load_bounds(store, tps, o.committed)
        seen = planning.visible(bounds, ends)
        start = planning.resolve(store, tps, seen, o.starting, o.timestamp_strategy)
        end = planning.resolve(store, tps, seen, o.ending, strategy="latest")
        ranges = []
        for (t, p), stable in zip(tps, ends, strict=True):
            k = planning.key(t, p)
            # read_committed never reads at or past the LSO, also when endingOffsets names a later offset.
            ranges.append((t, p, start[k], min(end[k], stable) if o.committed else end[k]))
        return planning.plan(store, ranges, o.max_records_per_partition, o.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, planning.RangePartition):
            return iter(())  # Spark plans one empty partition when there is nothing to read
        o = self.opts
        batches = read_partition(
            partition, o.redis_url, o.keyspace, o.include_headers, o.fail_on_data_loss, o.committed, o.cold
        )
        return decode_batches(batches, self.readers, o.redis_url, o.keyspace, o.include_headers)


class SchoonerDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "schooner"

    def schema(self) -> StructType:
        opts = {str(k).lower(): str(v) for k, v in self.options.items()}
        headers = parse_bool("includeHeaders", opts.get("includeheaders"), False)
        decodes = parse_decodes(opts)
        if not decodes:
            return kafka_schema(headers)
        # The decoded columns' types: the subjects' latest versions in the registry, now.
        return row_schema(headers, resolve_all(*connection(opts), decodes))

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = parse_source(self.options, streaming=False)
        return SchoonerBatchReader(opts, resolve_all(opts.redis_url, opts.keyspace, opts.decodes, schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts = parse_source(self.options, streaming=True)
        return SchoonerStreamReader(opts, resolve_all(opts.redis_url, opts.keyspace, opts.decodes, schema))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        check_sink_schema(schema, parse_sink(self.options))
        return SchoonerBatchWriter(parse_sink(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        check_sink_schema(schema, parse_sink(self.options))
        return SchoonerStreamWriter(parse_sink(self.options), schema)


def register(spark: Any) -> None:
    """Makes format("schooner") known to a SparkSession."""
    spark.dataSource.register(SchoonerDataSource)

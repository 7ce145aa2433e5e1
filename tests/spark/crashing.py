"""A test-only copy of the data source whose sink fails right after a micro-batch is written: the
tasks have appended, Spark has not yet written its commit. Option crashAtBatch picks the batch."""

from __future__ import annotations

from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from schooner.spark import SchoonerDataSource
from schooner.spark.options import SinkOptions, parse_sink
from schooner.spark.sink import SchoonerStreamWriter


class CrashAfterWrite(RuntimeError):
    pass


class CrashingWriter(SchoonerStreamWriter):
    def __init__(self, opts: SinkOptions, schema: StructType, crash_at: int) -> None:
        super().__init__(opts, schema)
        self.crash_at = crash_at

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        super().commit(messages, batchId)
        if batchId == self.crash_at:
            raise CrashAfterWrite(f"crash between the sink's write and Spark's commit of batch {batchId}")


class CrashingSchooner(SchoonerDataSource):
    @classmethod
    def name(cls) -> str:
        return "schooner_crash_test"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        crash_at = int(dict(self.options).get("crashatbatch", "-1"))
        return CrashingWriter(parse_sink(self.options), schema, crash_at)

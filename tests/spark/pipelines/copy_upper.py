"""A pipeline file for `schooner pipeline run`: copies a topic, upper-casing values, in small batches."""

from __future__ import annotations

from typing import Any


def build(spark: Any, options: dict[str, str]) -> Any:
    conn = {"redis.url": options["redis.url"], "keyspace": options["keyspace"]}
    source = (
        spark.readStream.format("schooner")
        .options(**conn)
        .option("subscribe", options["input"])
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", options.get("batch", "100"))
        .load()
    )
    upper = source.selectExpr("key", "upper(cast(value as string)) as value").repartition(3, "key")
    return (
        upper.writeStream.format("schooner")
        .options(**conn)
        .option("topic", options["output"])
        .option("checkpointLocation", options["checkpointLocation"] + "/copy_upper")
        .trigger(availableNow=True)
        .start()
    )

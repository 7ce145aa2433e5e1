"""Drops redelivered events: each event id is written once, however often it arrives within the watermark.

    schooner pipeline run examples/dedup.py -o input=raw-events -o output=events

Input records: key = event id, record timestamp = event time. Upstream at-least-once delivery sends
some events twice or more; Spark keeps each id for `watermark` after its event time and drops
repeats (dropDuplicatesWithinWatermark). Output records: the first copy of each event, unchanged.
"""

from __future__ import annotations

from typing import Any


def build(spark: Any, options: dict[str, str]) -> Any:
    conn = {"redis.url": options["redis.url"], "keyspace": options["keyspace"]}
    events = (
        spark.readStream.format("schooner")
        .options(**conn)
        .option("subscribe", options.get("input", "raw-events"))
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .options(**({"maxOffsetsPerTrigger": options["batch"]} if "batch" in options else {}))
        .load()
    )
    unique = events.withWatermark(
        "timestamp", options.get("watermark", "1 hour")
    ).dropDuplicatesWithinWatermark(["key"])
    writer = (
        unique.select("key", "value", "headers")
        .writeStream.format("schooner")
        .options(**conn)
        .option("topic", options.get("output", "events"))
        .option("checkpointLocation", options["checkpointLocation"] + "/dedup")
    )
    trigger = options.get("trigger", "5 seconds")
    return (
        writer.trigger(availableNow=True)
        if trigger == "availableNow"
        else writer.trigger(processingTime=trigger)
    ).start()

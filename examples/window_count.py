"""Page views per page and 1-minute tumbling window, with a watermark, written back to a topic.

    schooner pipeline run examples/window_count.py --redis-url redis://127.0.0.1:6379/0 \
        -o input=page-views -o output=page-view-counts

Input records: key = page name, record timestamp = when the page was viewed (event time).
Output records: key = page name, value = {"page", "start", "end", "count"} as JSON (times in ms).
A window is written once, when the watermark (the latest event time seen minus `watermark`) passes
its end; views that arrive after that are too late and are dropped, as Spark's watermark defines.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from schooner.spark import ensure_topic


def build(spark: Any, options: dict[str, str]) -> Any:
    conn = {"redis.url": options["redis.url"], "keyspace": options["keyspace"]}
    output = options.get("output", "page-view-counts")
    ensure_topic(conn, output, 1)
    views = (
        spark.readStream.format("schooner")
        .options(**conn)
        .option("subscribe", options.get("input", "page-views"))
        .option("startingOffsets", "earliest")
        .options(**({"maxOffsetsPerTrigger": options["batch"]} if "batch" in options else {}))
        .load()
    )
    counts = (
        views.select(F.col("key").cast("string").alias("page"), "timestamp")
        .withWatermark("timestamp", options.get("watermark", "30 seconds"))
        .groupBy(F.window("timestamp", options.get("window", "1 minute")), "page")
        .count()
    )
    records = counts.select(
        F.col("page").alias("key"),
        F.to_json(
            F.struct(
                "page",
                F.unix_millis(F.col("window.start")).alias("start"),
                F.unix_millis(F.col("window.end")).alias("end"),
                "count",
            )
        ).alias("value"),
    )
    writer = (
        records.writeStream.format("schooner")
        .options(**conn)
        .option("topic", output)
        .option("checkpointLocation", options["checkpointLocation"] + "/window_count")
        .outputMode("append")
    )
    trigger = options.get("trigger", "5 seconds")
    return (
        writer.trigger(availableNow=True)
        if trigger == "availableNow"
        else writer.trigger(processingTime=trigger)
    ).start()

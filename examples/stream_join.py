"""Orders joined with their payments: a stream-stream inner join of two topics, written to a topic.

    schooner pipeline run examples/stream_join.py -o orders=orders -o payments=payments -o output=paid-orders

Input records: key = order id in both topics; orders carry {"amount": ...}, payments {"method": ...}
as JSON values; the record timestamps are the event times. A payment matches an order when it comes
at most `within` after it. Watermarks on both sides let Spark drop join state that can no longer
match. Output records: key = order id, value = {"order_id", "amount", "method", "paid_after_ms"}.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F


def _read(spark: Any, conn: dict[str, str], topic: str) -> Any:
    return (
        spark.readStream.format("schooner")
        .options(**conn)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )


def build(spark: Any, options: dict[str, str]) -> Any:
    conn = {"redis.url": options["redis.url"], "keyspace": options["keyspace"]}
    within = options.get("within", "10 minutes")
    orders = (
        _read(spark, conn, options.get("orders", "orders"))
        .select(
            F.col("key").cast("string").alias("order_id"),
            F.get_json_object(F.col("value").cast("string"), "$.amount").cast("double").alias("amount"),
            F.col("timestamp").alias("ordered_at"),
        )
        .withWatermark("ordered_at", within)
    )
    payments = (
        _read(spark, conn, options.get("payments", "payments"))
        .select(
            F.col("key").cast("string").alias("paid_id"),
            F.get_json_object(F.col("value").cast("string"), "$.method").alias("method"),
            F.col("timestamp").alias("paid_at"),
        )
        .withWatermark("paid_at", within)
    )
    joined = orders.join(
        payments,
        F.expr(f"order_id = paid_id AND paid_at >= ordered_at AND paid_at <= ordered_at + interval {within}"),
        "inner",
    )
    records = joined.select(
        F.col("order_id").alias("key"),
        F.to_json(
            F.struct(
                "order_id",
                "amount",
                "method",
                (F.unix_millis("paid_at") - F.unix_millis("ordered_at")).alias("paid_after_ms"),
            )
        ).alias("value"),
    )
    writer = (
        records.writeStream.format("schooner")
        .options(**conn)
        .option("topic", options.get("output", "paid-orders"))
        .option("checkpointLocation", options["checkpointLocation"] + "/stream_join")
    )
    trigger = options.get("trigger", "5 seconds")
    return (
        writer.trigger(availableNow=True)
        if trigger == "availableNow"
        else writer.trigger(processingTime=trigger)
    ).start()

"""Produce v0, v1 and v2, written by hand: no maintained library generates them any more.

kio is generated from Kafka 4's message schemas, and Kafka 4 dropped these versions from its schema
(KIP-896) while still advertising them in ApiVersions: librdkafka enables gzip, snappy and lz4 only
when the broker's Produce range includes v0 (KAFKA-18659). Schooner serves them for real, for clients
that still send them (kafka-python with api_version (0, 9) or (0, 10), old librdkafka).

Each version's module declares its request and response in kio's form (frozen dataclasses whose
fields carry their Kafka wire type), so kio's reader and writer, the length checks of lengths.py and
make() treat them like any generated version. The layouts, from Kafka's protocol guide:

    request  v0-v2: acks int16, timeout_ms int32, [topic_data: name string,
                    [partition_data: index int32, records bytes (a legacy message set)]]
    response v0:    [responses: name string, [partition_responses: index int32, error_code int16,
                    base_offset int64]]
    response v1:    v0, then throttle_time_ms int32
    response v2:    v1, with log_append_time_ms int64 after base_offset in each partition

Their records are message sets of magic 0 and 1: protocol/legacy_records.py reads them.
"""

from __future__ import annotations

from kio.static.protocol import RequestPayload, ResponsePayload

from . import v0, v1, v2

PRODUCE = 0
REQUESTS: dict[tuple[int, int], type[RequestPayload]] = {
    (PRODUCE, 0): v0.ProduceRequest,
    (PRODUCE, 1): v1.ProduceRequest,
    (PRODUCE, 2): v2.ProduceRequest,
}
RESPONSES: dict[tuple[int, int], type[ResponsePayload]] = {
    (PRODUCE, 0): v0.ProduceResponse,
    (PRODUCE, 1): v1.ProduceResponse,
    (PRODUCE, 2): v2.ProduceResponse,
}

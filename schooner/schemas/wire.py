"""Confluent's wire format of a schema-encoded record, and the subject name strategies.

Byte 0 is the magic 0, bytes 1-4 the schema id (big-endian); then the payload (for Protobuf, message indexes
first). A subject is named after the topic (TopicNameStrategy: "<topic>-value" or "<topic>-key"), after the
record (RecordNameStrategy: its full name), or after both (TopicRecordNameStrategy: "<topic>-<full name>").
"""

from __future__ import annotations

MAGIC = 0
HEADER = 5

TOPIC_NAME = "TopicNameStrategy"
RECORD_NAME = "RecordNameStrategy"
TOPIC_RECORD_NAME = "TopicRecordNameStrategy"
STRATEGIES = (TOPIC_NAME, RECORD_NAME, TOPIC_RECORD_NAME)
_PACKAGE = "io.confluent.kafka.serializers.subject."  # how Confluent's configs spell the class names


def strategy(name: str) -> str:
    """A strategy by its short or Java class name; ValueError for another."""
    short = name.removeprefix(_PACKAGE)
    if short not in STRATEGIES:
        raise ValueError(f"unknown subject name strategy {name!r}: one of {', '.join(STRATEGIES)}")
    return short


def schema_id(data: bytes | None) -> int | None:
    """The schema id a record's key or value names, or None when it lacks the magic byte and an id."""
    if data is None or len(data) < HEADER or data[0] != MAGIC:
        return None
    return int.from_bytes(data[1:HEADER], "big")


def header(schema_id: int) -> bytes:
    """The 5 bytes a record encoded with the schema starts with."""
    return bytes([MAGIC]) + schema_id.to_bytes(4, "big")


def topic_subject(topic: str, is_key: bool) -> str:
    return f"{topic}-{'key' if is_key else 'value'}"


def record_subject(strategy_name: str, topic: str, record_name: str) -> str:
    if strategy_name == RECORD_NAME:
        return record_name
    return f"{topic}-{record_name}"

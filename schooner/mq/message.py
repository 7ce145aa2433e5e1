"""A delivered message, and the headers the MQ library adds to the records it appends again.

Every header the library owns starts with "schooner.mq."; they are kept out of Message.headers.
A retry is a new record on its original partition carrying the attempt number and the group it is for,
so Kafka consumers see it too, and MQ groups other than that one skip it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schooner.storage.log.entry import Header, parse_fields
from schooner.storage.mq.queue import Delivery
from schooner.storage.offsets import OffsetCodec

PREFIX = "schooner.mq."
ATTEMPT = PREFIX + "attempt"  # the attempt this record is (1 for the original; absent means 1)
GROUP = PREFIX + "group"  # the only MQ group that handles this record (set on retries and replays)
ORIGIN_OFFSET = PREFIX + "origin-offset"  # offset of the original record
FIRST_FAILURE = PREFIX + "first-failure-ms"
ERROR_TYPE = PREFIX + "error-type"  # the last failure's
ERROR_MESSAGE = PREFIX + "error-message"


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: list[Header] = field(default_factory=list)  # the record's own headers, in order
    attempt: int = 1
    deliveries: int = 1  # times Redis delivered this entry to the group (over 1 after a takeover)
    origin_offset: int = -1  # the original record's offset (this one's when it is the original)
    first_failure_ms: int | None = None
    last_error: tuple[str, str] | None = None  # (type, message) of the previous attempt's failure
    target_group: str | None = None
    entry_id: bytes = b""

    def header(self, name: str) -> bytes | None:
        """The first value of a header, None when absent."""
        for n, v in self.headers:
            if n == name:
                return v
        return None


def decode(topic: str, partition: int, offsets: OffsetCodec, delivery: Delivery) -> Message:
    timestamp, key, value, all_headers = parse_fields(delivery.fields)
    ms, _, seq = delivery.entry_id.partition(b"-")
    offset = ((int(ms) << offsets.bits) | int(seq or 0)) - offsets.shift
    if offset >> 63:  # a dense topic's entry added with `*`: it has no offset
        offset = -1
    if timestamp < 0:
        timestamp = int(ms)
    if not all_headers:  # the common case, kept cheap
        return _plain(topic, partition, offset, key, value, timestamp, delivery.deliveries, delivery.entry_id)
    own: dict[str, bytes | None] = {}
    user: list[Header] = []
    for name, v in all_headers:
        if name.startswith(PREFIX):
            own[name] = v
        else:
            user.append((name, v))
    error = own.get(ERROR_TYPE)
    return Message(
        topic=topic,
        partition=partition,
        offset=offset,
        key=key,
        value=value,
        timestamp=timestamp,
        headers=user,
        attempt=_int(own.get(ATTEMPT), 1),
        deliveries=delivery.deliveries,
        origin_offset=_int(own.get(ORIGIN_OFFSET), offset),
        first_failure_ms=_int(own.get(FIRST_FAILURE), 0) or None,
        last_error=(error.decode(), (own.get(ERROR_MESSAGE) or b"").decode("utf-8", "replace"))
        if error
        else None,
        target_group=(own.get(GROUP) or b"").decode() or None,
        entry_id=delivery.entry_id,
    )


# The slots' own setters: a frozen dataclass's __init__ sets each field through object.__setattr__, which
# costs a microsecond a message on the consume path; these build the same frozen Message in half that.
_new = object.__new__
_set = {name: getattr(Message, name).__set__ for name in Message.__slots__}
_topic, _partition, _offset = _set["topic"], _set["partition"], _set["offset"]
_key, _value, _timestamp, _headers = _set["key"], _set["value"], _set["timestamp"], _set["headers"]
_attempt, _deliveries, _origin = _set["attempt"], _set["deliveries"], _set["origin_offset"]
_first_failure, _last_error = _set["first_failure_ms"], _set["last_error"]
_target, _entry_id = _set["target_group"], _set["entry_id"]


def _plain(
    topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None, timestamp: int,
    deliveries: int, entry_id: bytes,
) -> Message:  # fmt: skip
    """A first attempt without headers, the same as Message(topic, partition, offset, key, value,
    timestamp, [], 1, deliveries, offset, entry_id=entry_id)."""
    m = _new(Message)
    _topic(m, topic)
    _partition(m, partition)
    _offset(m, offset)
    _key(m, key)
    _value(m, value)
    _timestamp(m, timestamp)
    _headers(m, [])
    _attempt(m, 1)
    _deliveries(m, deliveries)
    _origin(m, offset)
    _first_failure(m, None)
    _last_error(m, None)
    _target(m, None)
    _entry_id(m, entry_id)
    return m


def retry_headers(
    message: Message, group: str, attempt: int, first_failure_ms: int, error: tuple[str, str] | None
) -> list[Header]:
    """The record's own headers plus the library's, for the record appended as attempt `attempt`."""
    own: list[Header] = [
        (ATTEMPT, str(attempt).encode()),
        (GROUP, group.encode()),
        (ORIGIN_OFFSET, str(message.origin_offset).encode()),
        (FIRST_FAILURE, str(first_failure_ms).encode()),
    ]
    if error is not None:
        own += [(ERROR_TYPE, error[0].encode()), (ERROR_MESSAGE, error[1].encode())]
    return [*message.headers, *own]


def _int(raw: bytes | None, default: int) -> int:
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


def replay_headers(headers: list[Header], group: str, origin_offset: int) -> list[Header]:
    """A dead letter replayed to its origin: a fresh first attempt, only for the group that failed it."""
    own: list[Header] = [
        (ATTEMPT, b"1"),
        (GROUP, group.encode()),
        (ORIGIN_OFFSET, str(origin_offset).encode()),
    ]
    return [*headers, *own]

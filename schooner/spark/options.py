"""The data source's options, named as Spark's Kafka source names them, parsed once on the driver.

Spark hands options over as strings, with lower-cased names. Parsing resolves the connection defaults
(SCHOONER_REDIS_URL, SCHOONER_KEYSPACE) on the driver, so executors get the same values.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

EARLIEST = -2  # in offset JSON, as in Kafka
LATEST = -1

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_KEYSPACE = "schooner"
# A Spark input partition is split when its range holds about this many records (an estimate). Each
# task costs Spark a fixed ~0.1 s in local mode, so splits pay only for ranges this large.
DEFAULT_MAX_RECORDS_PER_PARTITION = 500_000

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, None: 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}

TopicPartition = tuple[str, int]

# Every option the reader takes (docs/spark.md lists them; a test keeps the two the same).
SOURCE_OPTIONS = (
    "redis.url", "keyspace", "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets",
    "startingTimestamp", "startingOffsetsByTimestamp", "endingTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy", "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
    "includeHeaders", "failOnDataLoss", "maxRecordsPerPartition", "minPartitions",
    "isolation.level", "kafka.isolation.level",
    "coldStore", "coldStore.endpoint", "coldStore.region", "coldStore.accessKeyId",
    "coldStore.secretAccessKey", "coldStore.allowHttp", "coldStore.catalog",
    "keyFormat", "keySubject", "valueFormat", "valueSubject",
)  # fmt: skip
# The cold store options and the broker settings (SCHOONER_COLD_STORE_*) they default to, so a job
# run beside a broker finds its cold tier as the broker does.
COLD_OPTIONS = {
    "coldstore": "url",
    "coldstore.endpoint": "endpoint",
    "coldstore.region": "region",
    "coldstore.accesskeyid": "access_key_id",
    "coldstore.secretaccesskey": "secret_access_key",
    "coldstore.allowhttp": "allow_http",
    "coldstore.catalog": "catalog",
}
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
RAW = "raw"
FORMATS = (RAW, "avro", "json")  # keyFormat / valueFormat


class OptionError(ValueError):
    """An option is missing, unknown in combination, or malformed."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """Which partitions to read: subscribe (names), subscribePattern (a regex) or assign (fixed)."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None  # Java's Matcher.matches()
        if self.assigned:
            return any(t == topic for t, _ in self.assigned)
        return topic in self.topics

    def partitions_of(self, topic: str, count: int) -> list[int]:
        if self.assigned:
            return sorted(p for t, p in self.assigned if t == topic)
        return list(range(count))


@dataclass(frozen=True, slots=True)
class Position:
    """startingOffsets / endingOffsets and their by-timestamp forms."""

    kind: str  # "earliest", "latest", "offsets", "timestamp", "timestamps"
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int = 0
    timestamps: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ColdOptions:
    """Where the topics' cold tier (their Delta tables) is: the broker's cold_store_* settings."""

    url: str
    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    allow_http: bool | None = None
    catalog: str | None = None  # Iceberg topics' catalog (cold_store_catalog); None: the one in Redis


@dataclass(frozen=True, slots=True)
class Decode:
    """keyFormat / valueFormat other than raw: the key or value decoded with the schema registry, into a
    column of the type the subject's latest version maps to (schooner/spark/decoding.py)."""

    field: str  # "key" or "value"
    format: str  # "avro" or "json"
    subject: str


@dataclass(frozen=True, slots=True)
class SourceOptions:
    redis_url: str
    keyspace: str
    subscription: Subscription
    starting: Position
    ending: Position
    include_headers: bool = False
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    max_records_per_partition: int = DEFAULT_MAX_RECORDS_PER_PARTITION
    min_partitions: int = 0
    timestamp_strategy: str = "error"  # startingOffsetsByTimestampStrategy: "error" or "latest"
    committed: bool = True  # isolation.level read_committed: ends at the LSO, no aborted records
    cold: ColdOptions | None = None  # coldStore: offsets below Redis' start are read from there
    decodes: tuple[Decode, ...] = ()  # keyFormat, valueFormat: key first


@dataclass(frozen=True, slots=True)
class SinkOptions:
    redis_url: str
    keyspace: str
    topic: str | None = None


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def connection(options: Mapping[str, str]) -> tuple[str, str]:
    opts = _lower(options)
    url = opts.get("redis.url") or os.environ.get("SCHOONER_REDIS_URL") or DEFAULT_REDIS_URL
    keyspace = opts.get("keyspace") or os.environ.get("SCHOONER_KEYSPACE") or DEFAULT_KEYSPACE
    return url, keyspace


def parse_bool(name: str, text: str | None, default: bool) -> bool:
    if text is None:
        return default
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    raise OptionError(f"{name} must be true or false, not {text!r}")


def parse_positive(name: str, text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"{name} must be a whole number, not {text!r}") from None
    if value <= 0:
        raise OptionError(f"{name} must be positive, not {value}")
    return value


def parse_duration_ms(name: str, text: str) -> int:
    m = _DURATION.match(text.lower())
    if not m:
        raise OptionError(f"{name} must be a duration such as 500ms, 30s, 15m or 1h, not {text!r}")
    return int(m.group(1)) * _UNIT_MS[m.group(2)]


def _load_json(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(f"{name} is not valid JSON: {exc}") from None


def parse_subscription(opts: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k)]
    if len(given) != 1:
        raise OptionError("set exactly one of subscribe, subscribePattern and assign")
    kind = given[0]
    if kind == "subscribe":
        topics = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
        if not topics:
            raise OptionError("subscribe names no topic")
        return Subscription(topics=topics)
    if kind == "subscribepattern":
        try:
            re.compile(opts["subscribepattern"])
        except re.error as exc:
            raise OptionError(f"subscribePattern is not a valid regex: {exc}") from None
        return Subscription(pattern=opts["subscribepattern"])
    raw = _load_json("assign", opts["assign"])
    if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
        raise OptionError('assign must be JSON such as {"topicA":[0,1],"topicB":[2,4]}')
    pairs = tuple(sorted({(str(t), int(p)) for t, ps in raw.items() for p in ps}))
    if not pairs:
        raise OptionError("assign names no partition")
    return Subscription(assigned=pairs)


def _partition_map(name: str, text: str) -> dict[TopicPartition, int]:
    raw = _load_json(name, text)
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise OptionError(f'{name} must be JSON such as {{"topicA":{{"0":23,"1":-1}}}}')
    try:
        return {(str(t), int(p)): int(o) for t, parts in raw.items() for p, o in parts.items()}
    except (TypeError, ValueError):
        raise OptionError(f"{name} holds a partition or offset that is not a number") from None


def parse_position(opts: Mapping[str, str], which: str, streaming: bool) -> Position:
    """which is "starting" or "ending". Kafka's precedence: by-timestamp forms over offsets."""
    single, per_partition = opts.get(f"{which}timestamp"), opts.get(f"{which}offsetsbytimestamp")
    if single is not None:
        try:
            return Position("timestamp", timestamp=int(single))
        except ValueError:
            raise OptionError(f"{which}Timestamp must be milliseconds since the epoch") from None
    if per_partition is not None:
        return Position("timestamps", timestamps=_partition_map(f"{which}OffsetsByTimestamp", per_partition))
    text = opts.get(f"{which}offsets")
    default = "latest" if (which == "ending" or streaming) else "earliest"
    text = (text or default).strip()
    if text.lower() in ("earliest", "latest"):
        kind = text.lower()
        if which == "ending" and kind == "earliest":
            raise OptionError("endingOffsets cannot be earliest")
        if which == "starting" and kind == "latest" and not streaming:
            raise OptionError("startingOffsets cannot be latest in a batch query")
        return Position(kind)
    offsets = _partition_map(f"{which}Offsets", text)
    if which == "ending" and EARLIEST in offsets.values():
        raise OptionError("endingOffsets cannot use -2 (earliest)")
    if which == "starting" and not streaming and LATEST in offsets.values():
        raise OptionError("startingOffsets cannot use -1 (latest) in a batch query")
    return Position("offsets", offsets=offsets)


def parse_isolation(opts: Mapping[str, str]) -> bool:
    """True for read_committed (the default). kafka.isolation.level, the Kafka consumer's setting that a
    Spark Kafka job passes, is read too."""
    given = {opts[k].strip().lower() for k in ("isolation.level", "kafka.isolation.level") if k in opts}
    if len(given) > 1:
        raise OptionError("isolation.level and kafka.isolation.level disagree")
    level = given.pop() if given else "read_committed"
    if level not in ISOLATION_LEVELS:
        raise OptionError(f"isolation.level must be read_committed or read_uncommitted, not {level!r}")
    return level == "read_committed"


def parse_cold(opts: Mapping[str, str]) -> ColdOptions | None:
    """The coldStore options, each defaulting to the broker's setting in the environment
    (SCHOONER_COLD_STORE_URL, ..._ENDPOINT, ..._REGION, ..._ACCESS_KEY_ID, ..._SECRET_ACCESS_KEY,
    ..._ALLOW_HTTP, ..._CATALOG), resolved here on the driver as the Redis URL is. None: no cold store."""
    given: dict[str, str] = {}
    for name, attr in COLD_OPTIONS.items():
        text = opts.get(name) or os.environ.get(f"SCHOONER_COLD_STORE_{attr.upper()}")
        if text:
            given[attr] = text
    url = given.pop("url", None)
    if url is None:
        if given and any(name in opts for name in COLD_OPTIONS):
            raise OptionError("the coldStore.* options need coldStore, the cold store's URL")
        return None
    allow = given.pop("allow_http", None)
    allow_http = None if allow is None else parse_bool("coldStore.allowHttp", allow, False)
    if "://" in url and not url.startswith(("file://", "s3://", "s3a://")):
        raise OptionError(f"coldStore must be a path, file:// or s3:// URL, not {url!r}")
    return ColdOptions(url, allow_http=allow_http, **given)


def _topics_read(subscription: Subscription) -> set[str] | None:
    """The topics a subscription reads, when they are known before planning (None for a pattern)."""
    if subscription.pattern is not None:
        return None
    return set(subscription.topics) | {t for t, _ in subscription.assigned}


def parse_decodes(options: Mapping[str, str]) -> tuple[Decode, ...]:
    """keyFormat / valueFormat with their subjects (default "<topic>-key" / "<topic>-value", as Confluent's
    TopicNameStrategy names them, which needs the query to read one topic)."""
    opts = _lower(options)
    found = []
    for side in ("key", "value"):
        fmt = opts.get(f"{side}format", RAW).strip().lower()
        if fmt not in FORMATS:
            raise OptionError(f"{side}Format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        subject = (opts.get(f"{side}subject") or "").strip()
        if fmt == RAW:
            if subject:
                raise OptionError(f"{side}Subject needs {side}Format avro or json")
            continue
        if not subject:
            topics = _topics_read(parse_subscription(opts))
            if topics is None or len(topics) != 1:
                which = "a pattern" if topics is None else f"several topics ({', '.join(sorted(topics))})"
                raise OptionError(
                    f"{side}Format={fmt} on {which}: set {side}Subject, the subject whose latest "
                    f"version gives the {side}Decoded column its type"
                )
            subject = f"{topics.pop()}-{side}"
        found.append(Decode(side, fmt, subject))
    return tuple(found)


def parse_source(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    opts = _lower(options)
    url, keyspace = connection(opts)
    if streaming and any(k in opts for k in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")):
        raise OptionError("ending offsets are for batch queries only")
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise OptionError("startingOffsetsByTimestampStrategy must be error or latest")
    max_per_trigger = parse_positive("maxOffsetsPerTrigger", opts.get("maxoffsetspertrigger"))
    min_per_trigger = parse_positive("minOffsetsPerTrigger", opts.get("minoffsetspertrigger"))
    if max_per_trigger and min_per_trigger and min_per_trigger > max_per_trigger:
        raise OptionError("minOffsetsPerTrigger is above maxOffsetsPerTrigger")
    return SourceOptions(
        redis_url=url,
        keyspace=keyspace,
        subscription=parse_subscription(opts),
        starting=parse_position(opts, "starting", streaming),
        ending=parse_position(opts, "ending", streaming) if not streaming else Position("latest"),
        include_headers=parse_bool("includeHeaders", opts.get("includeheaders"), False),
        fail_on_data_loss=parse_bool("failOnDataLoss", opts.get("failondataloss"), True),
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=parse_duration_ms("maxTriggerDelay", opts.get("maxtriggerdelay", "15m")),
        max_records_per_partition=parse_positive("maxRecordsPerPartition", opts.get("maxrecordsperpartition"))
        or DEFAULT_MAX_RECORDS_PER_PARTITION,
        min_partitions=parse_positive("minPartitions", opts.get("minpartitions")) or 0,
        timestamp_strategy=strategy,
        committed=parse_isolation(opts),
        cold=parse_cold(opts),
        decodes=parse_decodes(opts),
    )


def parse_sink(options: Mapping[str, str]) -> SinkOptions:
    opts = _lower(options)
    url, keyspace = connection(opts)
    return SinkOptions(redis_url=url, keyspace=keyspace, topic=opts.get("topic") or None)

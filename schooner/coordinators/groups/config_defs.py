"""Group configs, Kafka's GROUP config resource (KIP-848, KIP-932, KIP-1240, KIP-1191): each config's name,
type, broker-wide default, bounds, check and documentation, in one table. Pure: no Redis here.

A group config overrides a broker setting (Settings) for one group id. It may be set before the group
exists, and DeleteGroups leaves it, as in Kafka (see storage/groups/configs.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ...config import Settings
from ...storage.topics.config import ConfigSource, ConfigType, ConfigValue, InvalidConfig, valid_topic_name

CONSUMER_SESSION_TIMEOUT = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
SHARE_RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
SHARE_DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SHARE_PARTITION_MAX_RECORD_LOCKS = "share.partition.max.record.locks"
SHARE_SESSION_TIMEOUT = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
DLQ_TOPIC_NAME = "errors.deadletterqueue.topic.name"
DLQ_COPY_RECORD = "errors.deadletterqueue.copy.record.enable"

BY_DURATION = "by_duration:"
INT_MAX = 2**31 - 1

# A check takes the value and the broker's settings, and answers the value as stored (canonical), or
# raises InvalidConfig saying what is wrong.
Check = Callable[[str, Settings], str]


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    kind: ConfigType
    check: Check
    documentation: str
    setting: str | None = None  # the Settings field that holds the broker-wide default
    broker_name: str | None = None  # Kafka's name for that broker config, shown as the synonym
    constant: str = ""  # the default when no setting holds one

    def default(self, settings: Settings) -> str:
        if self.setting is None:
            return self.constant
        return _text(getattr(settings, self.setting))

    def stock_default(self) -> str:
        return self.default(Settings())


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _int_within(low_setting: str, high_setting: str) -> Check:
    def check(value: str, settings: Settings) -> str:
        if not re.fullmatch(r"[+-]?[0-9]+", value.strip()):
            raise InvalidConfig(f"{value!r} is not an integer")
        number = int(value)
        low, high = getattr(settings, low_setting), getattr(settings, high_setting)
        if not low <= number <= min(high, INT_MAX):
            raise InvalidConfig(
                f"it must be within {low}..{high} (the broker settings {low_setting} and {high_setting})"
            )
        return str(number)

    return check


def _one_of(*choices: str) -> Check:
    def check(value: str, settings: Settings) -> str:
        if value not in choices:
            raise InvalidConfig(f"it must be one of {', '.join(choices)}")
        return value

    return check


def _boolean(value: str, settings: Settings) -> str:
    if value.strip().lower() not in ("true", "false"):
        raise InvalidConfig("it must be true or false")
    return value.strip().lower()


# ISO-8601 durations as Java's Duration reads them (days, hours, minutes, seconds with a fraction), with
# no sign: Kafka refuses a negative one.
_DURATION = re.compile(
    r"P(?:(?P<d>[0-9]+)D)?(?:T(?=[0-9])(?:(?P<h>[0-9]+)H)?(?:(?P<m>[0-9]+)M)?"
    r"(?:(?P<s>[0-9]+)(?:[.,](?P<f>[0-9]{1,9}))?S)?)?",
    re.IGNORECASE,
)


def duration_ms(text: str) -> int | None:
    """An ISO-8601 duration (PnDTnHnMn.nS) in milliseconds; None when it is not one."""
    match = _DURATION.fullmatch(text)
    if match is None or not any(match.group(g) for g in "dhms"):
        return None
    days, hours, minutes, seconds = (int(match.group(g) or 0) for g in "dhms")
    millis = int(((match.group("f") or "") + "000")[:3])
    return (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000 + millis


def by_duration_ms(auto_offset_reset: str) -> int | None:
    """share.auto.offset.reset by_duration:<duration> as milliseconds back from now; None for latest and
    earliest. A share-partition without state starts at the first record no older than that."""
    if not auto_offset_reset.startswith(BY_DURATION):
        return None
    return duration_ms(auto_offset_reset[len(BY_DURATION) :])


def _auto_offset_reset(value: str, settings: Settings) -> str:
    if value in ("latest", "earliest"):
        return value
    if value.startswith(BY_DURATION):
        if duration_ms(value[len(BY_DURATION) :]) is None:
            raise InvalidConfig(
                "by_duration: needs a non-negative ISO-8601 duration (PnDTnHnMn.nS), e.g. by_duration:PT1H"
            )
        return value
    raise InvalidConfig("it must be latest, earliest or by_duration:<ISO-8601 duration>")


def _dlq_topic(value: str, settings: Settings) -> str:
    if value == "":
        return value
    if not valid_topic_name(value):
        raise InvalidConfig("it is not a legal topic name")
    prefix = settings.dlq_topic_name_prefix
    if not value.startswith(prefix):
        raise InvalidConfig(f"a dead-letter topic's name must start with {prefix!r} (dlq_topic_name_prefix)")
    return value


_DEFS = [
    GroupConfigDef(
        CONSUMER_SESSION_TIMEOUT,
        ConfigType.INT,
        _int_within("consumer_group_min_session_ms", "consumer_group_max_session_ms"),
        "A member of this consumer group (KIP-848 protocol) that sends no heartbeat for this long is "
        "removed, and its partitions go to the others.",
        "consumer_group_session_ms",
        "group.consumer.session.timeout.ms",
    ),
    GroupConfigDef(
        CONSUMER_HEARTBEAT_INTERVAL,
        ConfigType.INT,
        _int_within("consumer_group_min_heartbeat_ms", "consumer_group_max_heartbeat_ms"),
        "How often the members of this consumer group (KIP-848 protocol) are told to send a heartbeat.",
        "consumer_group_heartbeat_ms",
        "group.consumer.heartbeat.interval.ms",
    ),
    GroupConfigDef(
        SHARE_AUTO_OFFSET_RESET,
        ConfigType.STRING,
        _auto_offset_reset,
        "Where this share group starts reading a partition it has no state for: latest (records written "
        "from now on), earliest (the first record kept), or by_duration:<ISO-8601 duration> (the first "
        "record written within that long before now).",
        constant="latest",
    ),
    GroupConfigDef(
        SHARE_ISOLATION_LEVEL,
        ConfigType.STRING,
        _one_of("read_uncommitted", "read_committed"),
        "read_committed: this share group is given transactional records only once their transaction "
        "commits, never those of aborted ones. read_uncommitted: every record as soon as it is written.",
        constant="read_uncommitted",
    ),
    GroupConfigDef(
        SHARE_RECORD_LOCK_DURATION,
        ConfigType.INT,
        _int_within("share_min_record_lock_duration_ms", "share_max_record_lock_duration_ms"),
        "How long a member of this share group holds a record it was given before the record, "
        "unacknowledged, becomes available to the others again.",
        "share_record_lock_duration_ms",
        "group.share.record.lock.duration.ms",
    ),
    GroupConfigDef(
        SHARE_DELIVERY_COUNT_LIMIT,
        ConfigType.INT,
        _int_within("share_min_delivery_count_limit", "share_max_delivery_count_limit"),
        "How many times this share group is given one record before the record is archived (and sent to "
        "the dead-letter topic, if the group has one).",
        "share_delivery_count_limit",
        "group.share.delivery.count.limit",
    ),
    GroupConfigDef(
        SHARE_PARTITION_MAX_RECORD_LOCKS,
        ConfigType.INT,
        _int_within("share_min_partition_max_record_locks", "share_max_partition_max_record_locks"),
        "The most records of one partition that the members of this share group may hold at once; no "
        "more are given out until some are acknowledged or their locks run out.",
        "share_partition_max_record_locks",
        "group.share.partition.max.record.locks",
    ),
    GroupConfigDef(
        SHARE_SESSION_TIMEOUT,
        ConfigType.INT,
        _int_within("share_min_session_timeout_ms", "share_max_session_timeout_ms"),
        "A member of this share group that sends no heartbeat for this long is removed from the group.",
        "share_session_timeout_ms",
        "group.share.session.timeout.ms",
    ),
    GroupConfigDef(
        SHARE_HEARTBEAT_INTERVAL,
        ConfigType.INT,
        _int_within("share_min_heartbeat_interval_ms", "share_max_heartbeat_interval_ms"),
        "How often the members of this share group are told to send a heartbeat.",
        "share_heartbeat_interval_ms",
        "group.share.heartbeat.interval.ms",
    ),
    GroupConfigDef(
        DLQ_TOPIC_NAME,
        ConfigType.STRING,
        _dlq_topic,
        "The topic where this share group's rejected records, and those past the delivery count limit, "
        "are written; empty: the group has none and such records are only archived.",
    ),
    GroupConfigDef(
        DLQ_COPY_RECORD,
        ConfigType.BOOLEAN,
        _boolean,
        "true: a dead letter carries the original record's key, value and headers besides the headers "
        "saying where it came from and why; false: only those headers.",
        constant="false",
    ),
]
GROUP_CONFIG_DEFS: dict[str, GroupConfigDef] = {d.name: d for d in _DEFS}

# (session timeout, heartbeat interval): the session must be the longer.
_PAIRS = (
    (CONSUMER_SESSION_TIMEOUT, CONSUMER_HEARTBEAT_INTERVAL),
    (SHARE_SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL),
)


def check_value(name: str, value: str | None, settings: Settings) -> str:
    """The value as it is stored; InvalidConfig, naming the config, when the name or value is bad."""
    definition = GROUP_CONFIG_DEFS.get(name)
    if definition is None:
        raise InvalidConfig(f"Unknown group config name: {name}")
    if value is None:
        raise InvalidConfig(f"Group config {name} cannot be set to null")
    try:
        return definition.check(value, settings)
    except InvalidConfig as exc:
        raise InvalidConfig(f"Invalid value {value!r} for group config {name}: {exc}") from None


def validate(overrides: Mapping[str, str], settings: Settings) -> dict[str, str]:
    """A group's whole set of overrides, checked one by one and together; answered as stored."""
    checked = {name: check_value(name, value, settings) for name, value in overrides.items()}
    values = effective(checked, settings)
    for session, heartbeat in _PAIRS:
        # Only a group's own choice is judged: broker defaults that break the rule are the operator's.
        if (session in checked or heartbeat in checked) and int(values[session]) <= int(values[heartbeat]):
            raise InvalidConfig(
                f"{session} ({values[session]}) must be greater than {heartbeat} ({values[heartbeat]})"
            )
    return checked


def effective(overrides: Mapping[str, str], settings: Settings) -> dict[str, str]:
    """Every group config's value: the group's own, else the broker's default."""
    return {name: overrides.get(name, d.default(settings)) for name, d in GROUP_CONFIG_DEFS.items()}


def described(overrides: Mapping[str, str], settings: Settings) -> list[ConfigValue]:
    """Every group config as DescribeConfigs reports it, with its synonyms: the group's override, then
    the broker's setting when the operator changed it, then the built-in default."""
    values = []
    for name, d in GROUP_CONFIG_DEFS.items():
        synonyms: list[tuple[str, str | None, int]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], ConfigSource.DYNAMIC_GROUP_CONFIG))
        broker_name = d.broker_name or name
        if d.default(settings) != d.stock_default():
            synonyms.append((broker_name, d.default(settings), ConfigSource.STATIC_BROKER_CONFIG))
        synonyms.append((broker_name, d.stock_default(), ConfigSource.DEFAULT_CONFIG))
        _, value, source = synonyms[0]
        values.append(ConfigValue(name, value, source, False, d.kind, tuple(synonyms), d.documentation))
    return values


def consumer_timeouts(overrides: Mapping[str, str], settings: Settings) -> tuple[int, int]:
    """(session timeout, heartbeat interval) in ms of a KIP-848 consumer group."""
    values = effective(overrides, settings)
    return int(values[CONSUMER_SESSION_TIMEOUT]), int(values[CONSUMER_HEARTBEAT_INTERVAL])

"""Every script call the storage layer builds works on Redis Cluster: its keys share one hash slot (a
script runs on the one node that owns its keys' slot), and the script touches no key it was not given
(a key of another slot fails there: at once when another node owns that slot, after a reshard when
the same node does).

Each script in storage/scripts/ has a case here that builds its call through the storage function
that sends it, so a new script cannot land without being checked. Names are the awkward ones Kafka
allows for group and transactional ids: empty, or with braces that would end a hash tag early.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest
from redis.cluster import key_slot

from schooner.security.acls import AclBinding, AclOperation, PatternType, PermissionType, ResourceType
from schooner.storage import cluster, quotas
from schooner.storage.cold import marks
from schooner.storage.cold.iceberg import pointers
from schooner.storage.groups import commits, configs, lag, state
from schooner.storage.groups.commits import Owner
from schooner.storage.keys import Keyspace
from schooner.storage.log import append, compaction, producers, read, repair, retention, transactions
from schooner.storage.log.append import RecordBatch
from schooner.storage.log.entry import Record
from schooner.storage.mq import admin, dead_letters, leases, queue, retries
from schooner.storage.mq.dead_letters import DeadLetter
from schooner.storage.redis import scripts
from schooner.storage.redis.calls import Call, Steps
from schooner.storage.schemas import registry
from schooner.storage.schemas.registry import StoredSchema
from schooner.storage.security import acls as acl_store
from schooner.storage.share import partition as share
from schooner.storage.share.partition import AckBatch, Limits
from schooner.storage.topic_partition import TopicPartition
from schooner.storage.topics import metadata
from schooner.storage.topics.metadata import Topic, decode_topic
from schooner.storage.transactions import offsets as txn_offsets
from schooner.storage.transactions import state as txn_state

# Group ids, share group ids and transactional ids are any string in Kafka.
NAMES = ["payments", "", "}x", "}", "a}b", "{x}", "x{", "{", "~", "~x", "ü-ø", "a b"]
TOPICS = ["orders", "a.b-c_9", "x" * 249]
RECORD = Record(0, b"k", b"v")
LIMITS = Limits(lock_ms=30_000, delivery_limit=5, max_locks=200, read_committed=True, dead_letters=True)

Build = Callable[[Keyspace, Topic, str], Call[Any]]


def _topic(name: str, encoding: str = "dense") -> Topic:
    raw = {b"name": name, b"id": str(uuid.uuid4()), b"partitions": "12", b"offset_encoding": encoding}
    return decode_topic({k: v.encode() for k, v in raw.items()}, {})


def _sent(steps: Steps[Any], name: str, *replies: list[Any]) -> Call[Any]:
    """The call of script `name` in the round trip a procedure sends after the given replies."""
    batch = next(steps)
    for reply in replies:
        batch = steps.send(reply)
    (call,) = [c for c in batch if c.script == name]
    return call


def _letter(topic: Topic) -> DeadLetter:
    return DeadLetter(topic.name, 3, 7, "billing", 3, 3, 0, 0, "E", "m", 0, b"k", b"v", entry_id="1-0")


def _group_acl(group: str) -> AclBinding:
    name = group or "*"  # an ACL's resource name is any non-empty string
    return AclBinding(ResourceType.GROUP, name, PatternType.LITERAL, "User:a", "*", AclOperation.READ,
                      PermissionType.ALLOW)  # fmt: skip


BROKER = cluster.BrokerInfo(7, "127.0.0.1", 9092)


def _owner() -> Owner:
    return Owner(1, "1")


CASES: dict[str, Build] = {
    # the log
    "log_append": lambda ks, t, g: append.append(
        ks, t, 3, RecordBatch([RECORD]), sharded=True, transactional_id=g
    ),
    "log_txn_marker": lambda ks, t, g: transactions.write_marker(ks, t, 3, 1, 0, commit=True, sharded=True),
    "log_producer_expiry": lambda ks, t, g: _sent(producers.expire(ks, t, 3, 1000), "log_producer_expiry"),
    "log_compact": lambda ks, t, g: compaction.step(ks, t, 3, "token"),
    "log_renumber": lambda ks, t, g: _sent(repair.renumber(ks, t, 3), "log_renumber"),
    "log_delete_records": lambda ks, t, g: retention.delete_records(ks, t, 3, 5),
    "log_retention": lambda ks, t, g: retention.apply_retention(ks, t, 3),
    "log_read_marks": lambda ks, t, g: _sent(read.read(ks, t, 3, 0, 10, committed=True), "log_read_marks"),
    "log_tip": lambda ks, t, g: read.tip(ks, t.name, 3),
    "log_count": lambda ks, t, g: _sent(
        lag.partition_lag(ks, _topic(t.name, "timestamp"), 3, 0), "log_count", [None, None]
    ),
    # topics and quotas
    "topic_create": lambda ks, t, g: _sent(metadata.create(ks, t.name, 3, {}, {}), "topic_create"),
    "topic_delete": lambda ks, t, g: _sent(metadata.delete(ks, t.name), "topic_delete"),
    "topic_update": lambda ks, t, g: metadata.update(ks, t.name, partitions=4),
    "quotas_alter": lambda ks, t, g: quotas.alter(
        ks, (("user", g), ("client-id", g)), {"producer_byte_rate": 1}, []
    ),
    # the schema registry (a subject is any string)
    "schema_register": lambda ks, t, g: registry.register(ks, g, "fp", StoredSchema("AVRO", '"string"'), 0),
    "schema_delete": lambda ks, t, g: registry.delete(ks, g, permanent=False),
    # ACLs (a resource name is any string)
    "acls_alter": lambda ks, t, g: acl_store.add(ks, [_group_acl(g)]),
    # consumer groups and their configs
    "group_claim": lambda ks, t, g: state.claim(ks, g, 1),
    "group_save": lambda ks, t, g: _sent(state.save(ks, g, 1, "1", {"state": "Stable"}), "group_save"),
    "group_delete": lambda ks, t, g: _sent(state.delete(ks, g), "group_delete"),
    "group_commit": lambda ks, t, g: _sent(
        commits.commit(ks, g, _owner(), {TopicPartition(t.name, 3): (5, -1, None)}), "group_commit"
    ),
    "group_configs_alter": lambda ks, t, g: configs.alter(ks, g, {"share.record.lock.duration.ms": "30000"}),
    # transactions
    "txn_save": lambda ks, t, g: _sent(
        txn_state.save(ks, g, 0, txn_state.TransactionState(1, 0, 60_000)), "txn_save"
    ),
    "group_txn_offsets": lambda ks, t, g: txn_offsets.end(ks, g, 1, commit=True),
    # share groups (a share group's name is any group id)
    "share_acquire": lambda ks, t, g: share.acquire(ks, t, 3, g, "member", 10, LIMITS, "0"),
    "share_acknowledge": lambda ks, t, g: share.acknowledge(
        ks, t, 3, g, "member", [AckBatch(0, 0, (1,))], LIMITS
    ),
    "share_state": lambda ks, t, g: share.state(ks, t, 3, g),
    "share_reset": lambda ks, t, g: share.reset(ks, t, 3, g, 0),
    "share_release": lambda ks, t, g: share.release_member(ks, t, 3, g, "member"),
    # the MQ library (its group names are [a-zA-Z0-9._-], but a share group of the same name is not)
    "lease_acquire": lambda ks, t, g: leases.acquire(ks, t.name, 3, g, "token", 1000),
    "lease_renew": lambda ks, t, g: leases.renew(ks, t.name, 3, g, "token", 1000),
    "lease_release": lambda ks, t, g: leases.release(ks, t.name, 3, g, "token"),
    "lease_heartbeat": lambda ks, t, g: leases.heartbeat(ks, t.name, "billing", "member", 1000),
    "queue_group_create": lambda ks, t, g: queue.create_group(ks, t, 3, g),
    "queue_read": lambda ks, t, g: queue.read(ks, t, 3, g, "member", 10),
    "queue_claim": lambda ks, t, g: queue.claim(ks, t, 3, g, "member", b"0-0", 10),
    "queue_groups": lambda ks, t, g: admin.groups(ks, t.name, 3),
    "queue_lag": lambda ks, t, g: admin.lag(ks, t.name, 3, g),
    "queue_trim": lambda ks, t, g: admin.trim(ks, t, 3, 5),
    # the cold tier's marks and the archiver's claim
    "tier_claim": lambda ks, t, g: marks.claim(ks, t, 3, "token"),
    "tier_record": lambda ks, t, g: marks.record(ks, t, 3, 10, 0),
    # the brokers' registration
    "broker_register": lambda ks, t, g: _sent(cluster.heartbeat(ks, BROKER, 1000), "broker_register"),
    "broker_live": lambda ks, t, g: _sent(cluster.heartbeat(ks, BROKER, 1000), "broker_live"),
    "broker_id_allocate": lambda ks, t, g: cluster.allocate_broker_id(ks),
    "tier_trim": lambda ks, t, g: marks.trim_hot(ks, t, 3, 1000, -1),
    "retry_schedule": lambda ks, t, g: retries.schedule(ks, t.name, 3, g, b"1-0", 100, RECORD),
    "retry_move_due": lambda ks, t, g: retries.take_due(ks, t.name, 3),
    "retry_moved": lambda ks, t, g: retries.confirm(ks, t.name, 3, 0, 1),
    "dead_letter": lambda ks, t, g: dead_letters.add(ks, g, b"1-0", _letter(t)),
    "dead_letter_replay": lambda ks, t, g: dead_letters.replay_to_origin(ks, _letter(t), RECORD),
    "iceberg_swap": lambda ks, t, g: pointers.swap(ks, pointers.table_field("ns", t.name), None, "meta.json"),
}

# Sharded pub/sub channels scripts are given in ARGV, not KEYS: SPUBLISH needs one in the script's slot.
SHARD_CHANNELS = {"log_append": "ARGV[11]", "log_txn_marker": "ARGV[5]"}

# Plain commands of more than one key, with the keys they name.
MULTI_KEY: dict[str, Callable[[Keyspace, str], tuple[Call[Any], list[str]]]] = {
    "group exists": lambda ks, g: (state.exists(ks, g), [ks.group(g), ks.group_offsets(g)]),
}


def _script_names() -> set[str]:
    folder = resources.files("schooner.storage").joinpath("scripts")
    return {p.name[: -len(".lua")] for p in folder.iterdir() if p.name.endswith(".lua") and p.name[0] != "_"}


def test_every_script_has_a_case() -> None:
    assert set(CASES) == _script_names()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_script_calls_keys_share_one_slot(name: str) -> None:
    for prefix in ("schooner", "tenant-7.a_b"):
        ks = Keyspace(prefix)
        for topic_name in TOPICS:
            for group in NAMES:
                call = CASES[name](ks, _topic(topic_name), group)
                assert call.script == name
                assert call.keys, "a script without keys runs on a random node"
                named = list(call.keys)
                if name in SHARD_CHANNELS:
                    channel = call.args[int(SHARD_CHANNELS[name][len("ARGV[") : -1]) - 1]
                    if isinstance(channel, bytes):  # the append sends its arguments as bytes
                        channel = channel.decode()
                    assert channel == ks.appended_shard_channel(topic_name, 3)
                    named.append(channel)
                slots = {key_slot(k.encode()) for k in named}
                assert len(slots) == 1, (name, prefix, topic_name, group, named)


@pytest.mark.parametrize("name", sorted(MULTI_KEY))
def test_multi_key_commands_name_one_slot(name: str) -> None:
    for group in NAMES:
        call, keys = MULTI_KEY[name](Keyspace(), group)
        assert set(keys) <= {a for a in call.args if isinstance(a, str)}
        assert len({key_slot(k.encode()) for k in keys}) == 1, (name, group, keys)


def test_the_keys_of_a_group_and_of_a_partition_share_their_slot() -> None:
    ks = Keyspace()
    for group in NAMES:
        keys = [build(group) for build in (ks.group, ks.group_offsets, ks.group_txn_offsets, ks.group_configs,
                                           ks.share_topics)]  # fmt: skip
        assert len({key_slot(k.encode()) for k in keys}) == 1, keys
    for topic in TOPICS:
        keys = [*ks.partition_keys(topic, 3), ks.mq_lease(topic, 3, "g"), ks.mq_retries(topic, 3),
                ks.mq_retry_payloads(topic, 3), ks.mq_retry_mover(topic, 3), ks.mq_dead_letters(topic, 3),
                ks.share_partition(topic, 3, "}g"), ks.acks_marker(topic, 3)]  # fmt: skip
        assert len({key_slot(k.encode()) for k in keys}) == 1, keys
        assert key_slot(ks.mq_members(topic, "g").encode()) == key_slot(ks.mq_groups(topic).encode())


def test_the_acks_marker_of_a_key_is_in_that_keys_slot() -> None:
    """What a coordinator's write waits on (acks=all): a marker in the slot of the key written."""
    ks = Keyspace()
    for name in NAMES:
        for key in (ks.group_offsets(name), ks.share_partition("orders", 3, name), ks.transaction(name)):
            assert key_slot(ks.acks_marker_for(key).encode()) == key_slot(key.encode()), key
    assert key_slot(ks.acks_marker_for(ks.transaction_ids).encode()) == key_slot(ks.transaction_ids.encode())
    assert ks.acks_marker_for(ks.stream("orders", 3)) == ks.acks_marker("orders", 3)


def test_different_names_never_share_a_key() -> None:
    ks = Keyspace()
    for build in (ks.group, ks.group_offsets, ks.group_txn_offsets, ks.group_configs, ks.share_topics):
        built = [build(name) for name in NAMES]
        assert len(set(built)) == len(NAMES), built


# -- the scripts touch only the keys they are given ------------------------------------------------

_CALL = re.compile(r"redis\.p?call\(|pcall\(\s*redis\.p?call\s*,")
# Commands whose keys are not (only) the first argument.
_NO_KEY = {"TIME", "PUBLISH"}
_ALL_KEYS = {"DEL", "UNLINK", "EXISTS", "RENAME"}
_SUBCOMMAND_KEY = {"XINFO", "XGROUP", "OBJECT"}  # the key follows the subcommand


def _arguments(text: str, start: int) -> list[str]:
    """The top-level, comma-separated arguments of the call whose list starts at text[start] (or of the
    expressions up to the end of text)."""
    depth, quote, out, current = 0, "", [], ""
    for ch in text[start:]:
        if quote:
            current += ch
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                out.append(current.strip())
                return out
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
            continue
        current += ch
    return [*out, current.strip()]


def _key_arguments(args: list[str]) -> list[str]:
    """The arguments in key positions; for a command chosen at run time (`x and 'SPUBLISH' or
    'PUBLISH'`), those of every command it may be."""
    if not re.fullmatch(r"'[\w.]+'", args[0]):  # a module's command has a dot: SCHOONER.XADDRUN
        names = re.findall(r"'([A-Z.]+)'", args[0])
        assert names, args
        return [key for n in names for key in _key_arguments([f"'{n}'", *args[1:]])]
    command_name = args[0].strip("'\"").upper()
    rest = args[1:]
    if command_name in _NO_KEY:
        return []
    if command_name in _ALL_KEYS:
        return rest
    if command_name in _SUBCOMMAND_KEY:
        return rest[1:2]
    if command_name in ("XREAD", "XREADGROUP"):
        after = [a.strip("'\"").upper() for a in rest].index("STREAMS") + 1
        streams = rest[after:]
        return streams[: len(streams) // 2]
    return rest[:1]


def _assignments(source: str) -> dict[str, list[str]]:
    """Every value each local name is given: `local a, b = x, y`, `a = x`, and for a function's
    parameter, what each call of the function passes in its place."""
    found: dict[str, list[str]] = {}
    for match in re.finditer(r"function\s+([\w.]+)\(([^)]*)\)", source):
        params = [p.strip() for p in match.group(2).split(",") if p.strip()]
        calls = re.finditer(rf"(?<!function )(?<![\w.]){re.escape(match.group(1))}\(", source)
        passed = [_arguments(source, c.end()) for c in calls]
        for i, name in enumerate(params):
            found.setdefault(name, []).extend(args[i] if i < len(args) else "" for args in passed)
    for match in re.finditer(
        r"^[ \t]*(?:local[ \t]+)?([\w \t,]+?)[ \t]*=(?!=)[ \t]*(.+)$", source, re.MULTILINE
    ):
        names = [n.strip() for n in match.group(1).split(",")]
        values = _arguments(match.group(2), 0)
        for i, name in enumerate(names):
            found.setdefault(name, []).append(values[i] if i < len(values) else "")
    return found


def _given(expr: str, assigned: dict[str, list[str]], seen: frozenset[str] = frozenset()) -> bool:
    """Whether expr is a key the script was given: KEYS[n], or a name only ever set to such keys."""
    if re.fullmatch(r"KEYS\[\d+\]", expr):
        return True
    if expr in seen:  # a name passed on under its own name: its other values decide
        return True
    if not re.fullmatch(r"[A-Za-z_]\w*", expr) or expr not in assigned:
        return False
    return all(_given(v, assigned, seen | {expr}) for v in assigned[expr])


@pytest.mark.parametrize("name", sorted(_script_names()))
def test_a_script_touches_only_keys_it_is_given(name: str) -> None:
    source = re.sub(r"--[^\n]*", "", scripts.script(name).source)
    assigned = _assignments(source)
    for match in _CALL.finditer(source):
        args = _arguments(source, match.end())
        if args[0].startswith("unpack("):  # a command built as a table first: {'XCLAIM', KEYS[1], ...}
            tables = re.findall(r"=\s*\{(\s*'[A-Z]+'[^}]*)\}", source[: match.start()])
            assert tables, (name, args)
            args = _arguments(tables[-1], 0)
        for key in _key_arguments(args):
            if key == SHARD_CHANNELS.get(name):
                continue  # checked with the keys, in test_a_script_calls_keys_share_one_slot
            assert _given(key, assigned), f"{name}.lua: {args[0]} on {key!r}, not a key the script was given"


def _lint_passes(body: str) -> bool:
    source = re.sub(r"--[^\n]*", "", body)
    assigned = _assignments(source)
    (match,) = _CALL.finditer(source)
    return all(_given(k, assigned) for k in _key_arguments(_arguments(source, match.end())))


HELPER = "local function get(k, n)\n  return redis.call('GET', k)\nend\n"


def test_the_lint_finds_a_built_key() -> None:
    """The check above fails on a key a script makes itself, also one passed to a helper."""
    built = [
        "redis.call('GET', 'x:' .. ARGV[1])",
        "local k = KEYS[1] .. ':x'\nredis.call('GET', k)",
        "local k = ARGV[1]\nredis.call('SET', k, 1)",
        HELPER + "get(KEYS[1], 1)\nget('x' .. ARGV[1], 2)",
        "redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', KEYS[1], ARGV[1], '>', '>')",
        "redis.call(ARGV[2] == '1' and 'SPUBLISH' or 'PUBLISH', ARGV[1], 'm')",
    ]
    for body in built:
        assert not _lint_passes(body), body
    for body in (
        "local s, g = KEYS[2], ARGV[1]\nredis.call('XINFO', 'GROUPS', s)",
        HELPER + "get(KEYS[1], 1)",
        "redis.call('PUBLISH', ARGV[1], 'm')",
    ):
        assert _lint_passes(body), body


def test_names_that_would_break_a_hash_tag_are_refused() -> None:
    for prefix in ("t{a}", "t{", "}"):
        with pytest.raises(ValueError, match="braces"):
            Keyspace(prefix)
    for topic in ("{orders}", "}x", "", "a:b"):
        with pytest.raises(ValueError, match="not a legal topic name"):
            next(metadata.create(Keyspace(), topic, 1, {}, {}))

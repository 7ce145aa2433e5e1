"""Every Redis key Schooner uses is built here, and nowhere else. docs/key-layout.md describes them.

All keys of one partition share the hash tag {topic:partition}, so one script can touch them
atomically on Redis Cluster. Topic names are limited to [a-zA-Z0-9._-], so they cannot break a tag;
group ids can be any string, so theirs go through group_tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from redis.crc import key_slot

# A tenant's name is one segment of its keyspace prefix: no ":" (so "<prefix>:tenant:<name>:" ends where
# the name does, and no tenant's keys can be another's), no braces (hash tags), nothing a shell quotes.
TENANT_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


def hash_tag(key: str) -> str | None:
    """What Redis Cluster hashes of a key: the text between its first "{" and the next "}" when that
    is not empty; None when it hashes the whole key."""
    start = key.find("{")
    end = key.find("}", start + 1) if start >= 0 else -1
    return key[start + 1 : end] if end > start + 1 else None


@cache
def _tag_in_slot(slot: int) -> str:
    """A short hash tag that lands in the slot (found once per slot, by counting)."""
    n = 0
    while key_slot(str(n).encode()) != slot:
        n += 1
    return str(n)


def check_tenant_name(name: str) -> str:
    """The name, if it may name a tenant; ValueError otherwise."""
    if not TENANT_NAME.fullmatch(name):
        raise ValueError(f"a tenant name is 1 to 64 of [A-Za-z0-9._-]: {name!r}")
    return name


def group_tag(name: str) -> str:
    """{name}, the hash tag of a group's keys. Redis Cluster hashes the text between a key's first "{"
    and the next "}" unless that is empty, so a name that is empty or starts with "}" is tagged as "~"
    plus the name, and so is one starting with "~" (two names never share a key)."""
    if not name or name[0] in "}~":
        name = "~" + name
    return "{" + name + "}"


@dataclass(frozen=True, slots=True)
class Keyspace:
    prefix: str = "schooner"

    def __post_init__(self) -> None:
        if "{" in self.prefix or "}" in self.prefix:
            raise ValueError(
                f"a keyspace prefix has no braces (they make Redis Cluster hash tags): {self.prefix!r}"
            )

    def tenant(self, name: str) -> Keyspace:
        """The keyspace of one tenant of this deployment: `<prefix>:tenant:<name>`. It stays under
        `<prefix>:`, so one Redis ACL key pattern covers the deployment and its tenants, and no key of
        this keyspace starts with `<prefix>:tenant:`, so a tenant's keys never meet the deployment's."""
        return Keyspace(f"{self.prefix}:tenant:{check_tenant_name(name)}")

    # -- the log ----------------------------------------------------------------------------------
    def stream(self, topic: str, partition: int) -> str:
        """The partition's log: one entry per record."""
        return f"{self.prefix}:stream:{{{topic}:{partition}}}"

    def partition_state(self, topic: str, partition: int) -> str:
        """Hash: last assigned ID, running max timestamp, byte totals, producer (idempotence) state."""
        return f"{self.prefix}:pstate:{{{topic}:{partition}}}"

    def codec_runs(self, topic: str, partition: int) -> str:
        """Stream: an entry at the first ID of each run of batches one codec compressed (field `codec`:
        0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), so Fetch compresses them as their producer did. No
        entry before the first compressed batch; runs wholly below the log start are trimmed."""
        return f"{self.prefix}:codecs:{{{topic}:{partition}}}"

    def time_index(self, topic: str, partition: int) -> str:
        """Sorted set: batch start ID scored by the highest record timestamp seen up to that batch."""
        return f"{self.prefix}:tindex:{{{topic}:{partition}}}"

    def producers(self, topic: str, partition: int) -> str:
        """Sorted set: idempotent producer id scored by the time (ms) of its last append, for expiry."""
        return f"{self.prefix}:producers:{{{topic}:{partition}}}"

    def compaction_keys(self, topic: str, partition: int) -> str:
        """Hash: record key -> ID of the latest entry with that key that the compactor has reached."""
        return f"{self.prefix}:ckeys:{{{topic}:{partition}}}"

    def tombstones(self, topic: str, partition: int) -> str:
        """Sorted set: tombstone entry IDs the compactor has reached, scored by when it reached them (ms)."""
        return f"{self.prefix}:tombstones:{{{topic}:{partition}}}"

    def compactor(self, topic: str, partition: int) -> str:
        """String with PX: the token of the broker that compacts the partition now."""
        return f"{self.prefix}:compactor:{{{topic}:{partition}}}"

    def archiver(self, topic: str, partition: int) -> str:
        """String with PX: the token of the broker that archives the partition to the cold tier now."""
        return f"{self.prefix}:archiver:{{{topic}:{partition}}}"

    def compaction_aborts(self, topic: str, partition: int) -> str:
        """Hash: producer id -> "first,marker;..." of its aborted transactions the compactor has to pass."""
        return f"{self.prefix}:caborts:{{{topic}:{partition}}}"

    def txn_open(self, topic: str, partition: int) -> str:
        """Hash: producer id -> "epoch,first entry id,transactional id" of each transaction with records
        here and no marker yet; the smallest first entry id is the last stable offset."""
        return f"{self.prefix}:txn-open:{{{topic}:{partition}}}"

    def aborted(self, topic: str, partition: int) -> str:
        """Sorted set: "producer id,first entry id,marker entry id" of each aborted transaction, scored by
        the marker's offset."""
        return f"{self.prefix}:aborted:{{{topic}:{partition}}}"

    def partition_keys(self, topic: str, partition: int) -> list[str]:
        """Every key of the partition; scripts take the first four, deleting a topic removes all."""
        return [
            self.stream(topic, partition),
            self.partition_state(topic, partition),
            self.time_index(topic, partition),
            self.producers(topic, partition),
            self.compaction_keys(topic, partition),
            self.tombstones(topic, partition),
            self.compactor(topic, partition),
            self.txn_open(topic, partition),
            self.aborted(topic, partition),
            self.compaction_aborts(topic, partition),
            self.acks_marker(topic, partition),
            self.codec_runs(topic, partition),
        ]

    # -- topics: all metadata keys share the tag {meta}, so create and delete are one script ---------
    def topic(self, name: str) -> str:
        """Hash: id, name, partitions, offset_encoding, sequence_bits, created_ms, config.<name> each."""
        return f"{self.prefix}:{{meta}}:topic:{name}"

    @property
    def topic_names(self) -> str:
        """Set of all topic names."""
        return f"{self.prefix}:{{meta}}:topics"

    @property
    def topic_ids(self) -> str:
        """Hash: topic id (UUID text) -> topic name."""
        return f"{self.prefix}:{{meta}}:topic-ids"

    # -- consumer groups: every key of a group shares the tag {group id} (group_tag) ----------------
    def group(self, group_id: str) -> str:
        """Hash: the classic group's state, generation, protocol, leader, owner and members (JSON)."""
        return f"{self.prefix}:group:{group_tag(group_id)}"

    def group_offsets(self, group_id: str) -> str:
        """Hash: "topic:partition" -> committed offset, leader epoch, metadata and commit time (JSON)."""
        return f"{self.prefix}:offsets:{group_tag(group_id)}"

    @property
    def group_ids(self) -> str:
        """Set of every group id that has state or committed offsets."""
        return f"{self.prefix}:groups"

    # -- cluster ----------------------------------------------------------------------------------
    @property
    def cluster(self) -> str:
        """Hash: cluster_id."""
        return f"{self.prefix}:cluster"

    @property
    def brokers(self) -> str:
        """Sorted set: broker id scored by the time (ms) its registration lapses."""
        return f"{self.prefix}:brokers"

    def broker(self, broker_id: int) -> str:
        """Hash: host, port, rack, started_ms of one broker process."""
        return f"{self.prefix}:broker:{broker_id}"

    # -- security ---------------------------------------------------------------------------------
    @property
    def users(self) -> str:
        """Hash: user name -> JSON of its SCRAM credentials and tenant (storage/security/users.py)."""
        return f"{self.prefix}:users"

    # ACLs of this keyspace (a tenant's live under its own prefix): both keys share the tag {acls}, so
    # one script changes the bindings and bumps the version (storage/security/acls.py).
    @property
    def acl_bindings(self) -> str:
        """Set: every ACL binding, each a JSON array (storage/security/acls.py encodes them)."""
        return f"{self.prefix}:{{acls}}:bindings"

    @property
    def acl_version(self) -> str:
        """String: a counter bumped by every change of the bindings, for brokers' caches."""
        return f"{self.prefix}:{{acls}}:version"

    @property
    def acls_channel(self) -> str:
        """Pub/sub channel: the ACL script publishes the new version here when the bindings change."""
        return f"{self.prefix}:acls-changed"

    @property
    def broker_id_counter(self) -> str:
        return f"{self.prefix}:broker-id-seq"

    @property
    def producer_id_counter(self) -> str:
        return f"{self.prefix}:producer-id-seq"

    @property
    def appended_channel(self) -> str:
        """Pub/sub channel: append.lua publishes "topic:partition" here, so every broker wakes its fetches."""
        return f"{self.prefix}:appended"

    # -- transactions: the coordinator's state of one transactional id sits in the id's own slot -----
    def transaction(self, transactional_id: str) -> str:
        """Hash: version and state (JSON) of the id, replaced by compare-and-set (storage/transactions/)."""
        return f"{self.prefix}:txn:{{{transactional_id}}}"

    @property
    def transaction_ids(self) -> str:
        """Sorted set: every transactional id with state, scored by the time (ms) it last changed."""
        return f"{self.prefix}:txns"

    def group_txn_offsets(self, group_id: str) -> str:
        """Hash: "producer id|topic:partition" -> an offset committed inside an open transaction (JSON as
        in the group's offsets hash); moved there by the commit, dropped by an abort."""
        return f"{self.prefix}:offsets-txn:{group_tag(group_id)}"

    # -- MQ library -------------------------------------------------------------------------------
    # Per-partition keys carry the partition's tag, so each MQ script (ack + retry, ack + dead letter,
    # lease-checked read) touches one slot. Group names are limited to [a-zA-Z0-9._-] like topics.
    def mq_lease(self, topic: str, partition: int, group: str) -> str:
        """String with PX: the owner token of the member that holds the partition for the group."""
        return f"{self.prefix}:mq:lease:{{{topic}:{partition}}}:{group}"

    def mq_retries(self, topic: str, partition: int) -> str:
        """Sorted set: retry id ("group/entry-id") scored by the time (ms) it is due."""
        return f"{self.prefix}:mq:retry:{{{topic}:{partition}}}"

    def mq_retry_payloads(self, topic: str, partition: int) -> str:
        """Hash: retry id -> the record to append again (storage/retries.py packs it)."""
        return f"{self.prefix}:mq:retry-data:{{{topic}:{partition}}}"

    def mq_retry_mover(self, topic: str, partition: int) -> str:
        """Hash: producer_id, next_seq, and the move batch in progress (batch, batch_seq)."""
        return f"{self.prefix}:mq:retry-mover:{{{topic}:{partition}}}"

    def mq_dead_letters(self, topic: str, partition: int) -> str:
        """Stream: the dead letters of one partition (a topic's DLQ is the union over its partitions)."""
        return f"{self.prefix}:mq:dlq:{{{topic}:{partition}}}"

    def mq_members(self, topic: str, group: str) -> str:
        """Sorted set: live member ids of the group, scored by the time (ms) their heartbeat lapses."""
        return f"{self.prefix}:mq:members:{{{topic}}}:{group}"

    def mq_groups(self, topic: str) -> str:
        """Set: the MQ groups that consume the topic."""
        return f"{self.prefix}:mq:groups:{{{topic}}}"

    # -- client quotas: every key shares the tag {quotas}, so one script updates an entity and the index
    @property
    def quota_entities(self) -> str:
        """Set: the id of every quota entity that has at least one quota (storage/quotas.py builds ids)."""
        return f"{self.prefix}:{{quotas}}:entities"

    def quota_entity(self, entity_id: str) -> str:
        """Hash: quota key (producer_byte_rate, ...) -> value, as decimal text, of one entity."""
        return f"{self.prefix}:{{quotas}}:entity:{entity_id}"

    # -- the schema registry: every key shares the tag {schemas}, so one script registers a version ---
    @property
    def schema_next_id(self) -> str:
        """String: the last schema id handed out (INCR), so ids are never reused, not even after a delete."""
        return f"{self.prefix}:{{schemas}}:next-id"

    @property
    def schema_texts(self) -> str:
        """Hash: schema id -> JSON {"schemaType", "schema", "references"}; kept after its versions go."""
        return f"{self.prefix}:{{schemas}}:by-id"

    @property
    def schema_fingerprints(self) -> str:
        """Hash: fingerprint (sha256 of type, text and references) -> schema id: the same schema gets the
        same id under every subject."""
        return f"{self.prefix}:{{schemas}}:by-fingerprint"

    @property
    def schema_uses(self) -> str:
        """Hash: schema id -> how many versions (soft-deleted ones included) hold it; 0 once all are gone."""
        return f"{self.prefix}:{{schemas}}:uses"

    @property
    def schema_subjects(self) -> str:
        """Set: every subject with a version, soft-deleted ones included."""
        return f"{self.prefix}:{{schemas}}:subjects"

    def schema_versions(self, subject: str) -> str:
        """Hash: version -> schema id, with ":deleted" after it once soft-deleted."""
        return f"{self.prefix}:{{schemas}}:versions:{subject}"

    @property
    def schema_configs(self) -> str:
        """Hash: subject ("" for the global one) -> JSON config {"compatibilityLevel", "normalize"}."""
        return f"{self.prefix}:{{schemas}}:config"

    @property
    def schema_modes(self) -> str:
        """Hash: subject ("" for the global one) -> READWRITE, READONLY or IMPORT."""
        return f"{self.prefix}:{{schemas}}:mode"

    # -- share groups (KIP-932): a share partition is the Redis consumer group named after the share group
    # on the partition's stream (its pending entries are the in-flight window), plus these keys.
    def share_partition(self, topic: str, partition: int, group: str) -> str:
        """Hash: archived, dead_lettered: counters of one share partition (in the partition's slot)."""
        return f"{self.prefix}:share:{{{topic}:{partition}}}:{group}"

    def share_topics(self, group: str) -> str:
        """Set: the topics where the share group has initialized share partitions (for Describe and
        Delete of its offsets and for DeleteGroups)."""
        return f"{self.prefix}:share-topics:{group_tag(group)}"

    # -- group configs: beside the group's keys, in its slot ---------------------------------------
    def group_configs(self, group_id: str) -> str:
        """Hash: group config name -> value, the overrides set for one group id (groups/configs.py)."""
        return f"{self.prefix}:group-configs:{group_tag(group_id)}"

    # -- the cold tier's Iceberg catalog (storage/cold/iceberg/catalog.py): both keys share the tag {iceberg},
    # so a commit's compare-and-swap is one script on one node.
    @property
    def iceberg_tables(self) -> str:
        """Hash: "<namespace>\\x00<table>" -> the Iceberg table's current metadata file, moved by
        compare-and-swap only (a commit against a stale metadata file fails)."""
        return f"{self.prefix}:{{iceberg}}:tables"

    @property
    def iceberg_namespaces(self) -> str:
        """Hash: Iceberg namespace ("." between its levels) -> JSON of its properties."""
        return f"{self.prefix}:{{iceberg}}:namespaces"

    # -- acks=all ----------------------------------------------------------------------------------
    def acks_marker_for(self, key: str) -> str:
        """The acks marker in another key's slot: with that key's hash tag, or, for a key hashed whole
        (no tag, or "{}" first), with a tag found to land in its slot."""
        tag = hash_tag(key)
        if tag is None:
            tag = _tag_in_slot(key_slot(key.encode()))
        return f"{self.prefix}:acks:{{{tag}}}"

    def acks_marker(self, topic: str, partition: int) -> str:
        """String with PX: written before each acks=all WAIT on the partition's node, because WAIT
        counts the writes of its own connection and the appends went down the lane's."""
        return f"{self.prefix}:acks:{{{topic}:{partition}}}"

    # -- pub/sub channels beyond schooner:appended -------------------------------------------------
    def appended_shard_channel(self, topic: str, partition: int) -> str:
        """Sharded pub/sub channel (Redis Cluster): the append scripts SPUBLISH "topic:partition" here.
        It carries the partition's hash tag, so it lives in the slot the scripts run in."""
        return f"{self.prefix}:appended:{{{topic}:{partition}}}"

    @property
    def topics_channel(self) -> str:
        """Pub/sub channel: the topic scripts publish a topic's name when they create, delete or change
        it, so every broker drops its cached copy."""
        return f"{self.prefix}:topics-changed"

    @property
    def quotas_channel(self) -> str:
        """Pub/sub channel: quotas_alter.lua publishes the id of the entity it changed, so every broker
        reloads its client quotas at once."""
        return f"{self.prefix}:quotas-changed"

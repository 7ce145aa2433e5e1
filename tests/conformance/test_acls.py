"""ACL denials: with the authorizer on and resources without ACLs open to everyone, what one DENY rule
closes and what it leaves open, API by API, as Kafka decides it."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.list_offsets.v9.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

from tests.conformance.peers import Peer, create_topic, plain, same_answers, unique
from tests.wire import fetch_request, produce_request

TOPIC, GROUP = 2, 3
LITERAL, PREFIXED = 3, 4
READ, WRITE, DESCRIBE = 3, 4, 8
DENY, ALLOW = 2, 3
ANONYMOUS = "User:ANONYMOUS"


def acl(peer: Peer, resource_type: int, name: str, pattern: int, operation: int, permission: int) -> Any:
    creation = AclCreation(
        resource_type=resource_type, resource_name=name, resource_pattern_type=pattern, principal=ANONYMOUS,
        host="*", operation=operation, permission_type=permission,
    )  # fmt: skip
    return plain(peer.call(CreateAclsRequest(creations=(creation,))))


def _reach(peer: Peer, topic: str, group: str) -> dict[str, Any]:
    """What ANONYMOUS may do with a topic and a group: each API's error codes."""
    metadata = peer.call(
        MetadataRequest(
            topics=(MetadataRequestTopic(name=topic, topic_id=uuid.UUID(int=0)),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    )
    listing = peer.call(
        ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                ListOffsetsTopic(
                    name=topic, partitions=(ListOffsetsPartition(partition_index=0, timestamp=-1),)
                ),
            ),
        )  # fmt: skip
    )
    commit = peer.call(
        OffsetCommitRequest(
            group_id=group,
            member_id="",
            topics=(
                OffsetCommitRequestTopic(
                    name=topic,
                    partitions=(
                        OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=0, committed_metadata=None
                        ),
                    ),
                ),
            ),
        )  # fmt: skip
    )
    return {
        "metadata": metadata.topics[0].error_code.name,
        "produce": peer.call(produce_request(topic, [b"v"]))
        .responses[0]
        .partition_responses[0]
        .error_code.name,
        "fetch": peer.call(fetch_request(topic, 0)).responses[0].partitions[0].error_code.name,
        "list_offsets": listing.topics[0].partitions[0].error_code.name,
        "commit": commit.topics[0].partitions[0].error_code.name,
    }


def test_one_deny_rule_closes_what_kafka_closes(kafka: Peer, schooner: Peer) -> None:
    base = unique("acl")

    def scenario(peer: Peer) -> Any:
        for suffix in ("open", "no-write", "no-read", "allow-read", "prefixed-x"):
            create_topic(peer, f"{base}-{suffix}")
        created = [
            acl(peer, TOPIC, f"{base}-no-write", LITERAL, WRITE, DENY),
            acl(peer, TOPIC, f"{base}-no-read", LITERAL, READ, DENY),
            acl(peer, TOPIC, f"{base}-allow-read", LITERAL, READ, ALLOW),
            acl(peer, TOPIC, f"{base}-prefixed", PREFIXED, DESCRIBE, DENY),
            acl(peer, GROUP, f"{base}-closed", LITERAL, READ, DENY),
        ]
        reach = {
            suffix: _reach(peer, f"{base}-{suffix}", f"{base}-{group}")
            for suffix, group in (
                ("open", "open"),
                ("no-write", "open"),
                ("no-read", "open"),
                ("allow-read", "open"),
                ("prefixed-x", "open"),
                ("open", "closed"),
            )  # fmt: skip
        }
        return created, reach

    same_answers(scenario, kafka, schooner)


__all__ = ["datetime"]

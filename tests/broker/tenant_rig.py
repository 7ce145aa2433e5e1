"""Requests served by a running broker's dispatcher as a session of a tenant would have them served.

Until a client can authenticate as a tenant's user (SASL), this is how the tests reach a tenant: the
request is encoded and decoded as on the wire, its scope is built as the connection builds it, and the
broker's own dispatcher (Broker.dispatch) picks the context and runs the real handler on the broker's
loop against the real Redis. The response must serialize, as it would have to on a connection.
"""

from __future__ import annotations

import datetime
from typing import Any

from schooner.broker.net.session import RequestScope, Session
from schooner.config import Listener
from schooner.protocol.apis import ApiKey, request_type
from schooner.protocol.messages import decode_request, encode_response, make, sibling
from tests.wire import encode_request, fetch_request, produce_request

LISTENER = Listener("PLAINTEXT", "127.0.0.1", 0)  # the test brokers' one listener
TIMEOUT = datetime.timedelta(seconds=10)


def serve(broker: Any, tenant: str | None, body: Any) -> Any:
    """The broker's response to the request from a session of the tenant (None: no tenant)."""
    request = decode_request(encode_request(body)[4:])

    async def as_session() -> Any:
        principal = f"User:{tenant}-user" if tenant else "User:ANONYMOUS"
        session = Session(LISTENER, "127.0.0.1", principal=principal, tenant=tenant)
        assert broker.broker.dispatch is not None
        return await broker.broker.dispatch(request, scope(session))

    response = broker.call(as_session())
    encode_response(request.header, response)
    return response


def scope(session: Session) -> RequestScope:
    """The scope the connection gives a request of the session."""
    return RequestScope(session, "tenant-rig", f"/{session.host}")


def body(api: ApiKey, version: int, **values: Any) -> Any:
    return make(request_type(api, version), **values)


def part(api: ApiKey, version: int, entity: str, **values: Any) -> Any:
    return make(sibling(request_type(api, version), entity), **values)


def create_topic(broker: Any, tenant: str | None, name: str, partitions: int, **configs: str) -> int:
    """CreateTopics v7; the topic's error code."""
    c = ApiKey.CREATE_TOPICS
    entries = tuple(part(c, 7, "CreatableTopicConfig", name=k, value=v) for k, v in configs.items())
    topic = part(c, 7, "CreatableTopic", name=name, num_partitions=partitions, replication_factor=-1,
                 assignments=(), configs=entries)  # fmt: skip
    return int(serve(broker, tenant, body(c, 7, topics=(topic,), timeout=TIMEOUT)).topics[0].error_code)


def metadata(broker: Any, tenant: str | None, *names: str, auto_create: bool = False) -> dict[str, Any]:
    """Metadata v12 of the named topics (all topics when none): name -> the response's topic."""
    m = ApiKey.METADATA
    topics = tuple(part(m, 12, "MetadataRequestTopic", topic_id=None, name=n) for n in names) or None
    request = body(m, 12, topics=topics, allow_auto_topic_creation=auto_create,
                   include_topic_authorized_operations=False)  # fmt: skip
    return {t.name: t for t in serve(broker, tenant, request).topics}


def produce(broker: Any, tenant: str | None, topic: str, values: list[bytes]) -> Any:
    """The partition response of a Produce v9 of the values to partition 0."""
    return serve(broker, tenant, produce_request(topic, values)).responses[0].partition_responses[0]


def fetch(broker: Any, tenant: str | None, topic: str, offset: int = 0) -> Any:
    """The partition response of a Fetch v12 of partition 0 from the offset."""
    return serve(broker, tenant, fetch_request(topic, offset)).responses[0].partitions[0]


def commit(broker: Any, tenant: str | None, group: str, topic: str, offset: int) -> int:
    """A standalone OffsetCommit v8 (generation -1) of partition 0; its error code."""
    o = ApiKey.OFFSET_COMMIT
    p = part(o, 8, "OffsetCommitRequestPartition", partition_index=0, committed_offset=offset,
             committed_metadata=None)  # fmt: skip
    t = part(o, 8, "OffsetCommitRequestTopic", name=topic, partitions=(p,))
    request = body(o, 8, group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=(t,))
    return int(serve(broker, tenant, request).topics[0].partitions[0].error_code)


def committed(broker: Any, tenant: str | None, group: str, topic: str) -> int:
    """The group's committed offset of partition 0 by OffsetFetch v8 (-1 for none)."""
    o = ApiKey.OFFSET_FETCH
    t = part(o, 8, "OffsetFetchRequestTopics", name=topic, partition_indexes=(0,))
    g = part(o, 8, "OffsetFetchRequestGroup", group_id=group, topics=(t,))
    group_response = serve(broker, tenant, body(o, 8, groups=(g,))).groups[0]
    return int(group_response.topics[0].partitions[0].committed_offset)


def group_ids(broker: Any, tenant: str | None) -> set[str]:
    response = serve(broker, tenant, body(ApiKey.LIST_GROUPS, 4))
    return {g.group_id for g in response.groups}


def init_producer_id(broker: Any, tenant: str | None, transactional_id: str | None) -> Any:
    request = body(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=transactional_id, transaction_timeout=TIMEOUT)
    return serve(broker, tenant, request)


def transactional_ids(broker: Any, tenant: str | None) -> set[str]:
    response = serve(broker, tenant, body(ApiKey.LIST_TRANSACTIONS, 1))
    return {t.transactional_id for t in response.transaction_states}


def producer_ids(broker: Any, tenant: str | None, topic: str) -> Any:
    """DescribeProducers v0 of partition 0: (error code, the active producer ids)."""
    d = ApiKey.DESCRIBE_PRODUCERS
    t = part(d, 0, "TopicRequest", name=topic, partition_indexes=(0,))
    p = serve(broker, tenant, body(d, 0, topics=(t,))).topics[0].partitions[0]
    return int(p.error_code), {s.producer_id for s in p.active_producers}

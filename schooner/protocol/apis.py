"""Which APIs and versions the broker serves, and the kio message types for each.

Only versions that have a handler are advertised (KIP-511). The ranges follow Kafka 4.0's minimums
and Kafka 4.1's maximums as generated in kio, except Produce, served from v0 (legacy_produce/).
"""

from __future__ import annotations

from enum import IntEnum
from functools import cache

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.index import api_key_map
from kio.static.protocol import RequestPayload, ResponsePayload

from . import legacy_produce


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_CLUSTER = 60
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    ELECT_LEADERS = 43
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    UPDATE_FEATURES = 57
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92
    SASL_HANDSHAKE = 17
    SASL_AUTHENTICATE = 36
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51


# api key -> (min, max) of the versions this broker serves.
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 13),
    ApiKey.FETCH: (4, 18),
    ApiKey.LIST_OFFSETS: (1, 11),
    ApiKey.METADATA: (0, 13),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 6),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_COMMIT: (2, 10),
    ApiKey.OFFSET_FETCH: (1, 10),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (1, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 5),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.UPDATE_FEATURES: (0, 2),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 5),
    ApiKey.TXN_OFFSET_COMMIT: (0, 5),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 2),
    ApiKey.SHARE_FETCH: (1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: (1, 2),
    ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
    ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
    ApiKey.STREAMS_GROUP_HEARTBEAT: (0, 0),
    ApiKey.STREAMS_GROUP_DESCRIBE: (0, 0),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0),
    # SaslHandshake v0 stays, as in Kafka 4 (KAFKA-18270): librdkafka sends no handshake unless v0 is in
    # the range, and v0's unframed tokens are what kafka-python 2.0.2 speaks (docs/security.md).
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
}


def is_supported(api_key: int, api_version: int) -> bool:
    bounds = SUPPORTED_VERSIONS.get(api_key)
    return bounds is not None and bounds[0] <= api_version <= bounds[1]


def is_served(api_key: int) -> bool:
    return api_key in SUPPORTED_VERSIONS


@cache
def request_type(api_key: int, api_version: int) -> type[RequestPayload]:
    """The request class of an API version. Raises KioIndexError when there is none."""
    legacy = legacy_produce.REQUESTS.get((api_key, api_version))
    return legacy if legacy is not None else load_request_schema(api_key, api_version)


@cache
def response_type(api_key: int, api_version: int) -> type[ResponsePayload]:
    legacy = legacy_produce.RESPONSES.get((api_key, api_version))
    return legacy if legacy is not None else load_response_schema(api_key, api_version)


def has_schema(api_key: int, api_version: int) -> bool:
    """Whether the request and response of this API version can be read and built at all."""
    try:
        request_type(api_key, api_version)
        response_type(api_key, api_version)
    except KioIndexError:
        return False
    return True


def api_name(api_key: int) -> str:
    """The API's name for logs: ours, else kio's, else the bare key."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        name = api_key_map.get(api_key)
        return name.upper() if name else f"api key {api_key}"


def is_flexible(api_key: int, api_version: int) -> bool:
    return bool(request_type(api_key, api_version).__flexible__)


# KIP-219: from these versions on a client backs off by itself when a response says it is throttled, so
# the response goes out at once. Older ones are held back for the throttle time instead. APIs not listed
# came after KIP-219 and always back off.
_CLIENT_THROTTLES_FROM = {
    ApiKey.PRODUCE: 6,
    ApiKey.FETCH: 8,
    ApiKey.LIST_OFFSETS: 3,
    ApiKey.METADATA: 6,
    ApiKey.OFFSET_COMMIT: 4,
    ApiKey.OFFSET_FETCH: 4,
    ApiKey.FIND_COORDINATOR: 2,
    ApiKey.JOIN_GROUP: 3,
    ApiKey.HEARTBEAT: 2,
    ApiKey.LEAVE_GROUP: 2,
    ApiKey.SYNC_GROUP: 2,
    ApiKey.DESCRIBE_GROUPS: 2,
    ApiKey.LIST_GROUPS: 2,
    ApiKey.API_VERSIONS: 2,
    ApiKey.CREATE_TOPICS: 3,
    ApiKey.DELETE_TOPICS: 2,
    ApiKey.DELETE_RECORDS: 1,
    ApiKey.INIT_PRODUCER_ID: 1,
    ApiKey.ADD_PARTITIONS_TO_TXN: 1,
    ApiKey.ADD_OFFSETS_TO_TXN: 1,
    ApiKey.END_TXN: 1,
    ApiKey.TXN_OFFSET_COMMIT: 1,
    ApiKey.DESCRIBE_CONFIGS: 2,
    ApiKey.ALTER_CONFIGS: 1,
    ApiKey.CREATE_PARTITIONS: 1,
    ApiKey.DELETE_GROUPS: 1,
    ApiKey.DESCRIBE_ACLS: 1,
    ApiKey.CREATE_ACLS: 1,
    ApiKey.DELETE_ACLS: 1,
    ApiKey.ALTER_REPLICA_LOG_DIRS: 1,
    ApiKey.DESCRIBE_LOG_DIRS: 1,
    36: 1,  # SaslAuthenticate
}


def client_throttles(api_key: int, version: int) -> bool:
    """Whether a client backs off by itself on this response (KIP-219)."""
    return version >= _CLIENT_THROTTLES_FROM.get(api_key, 0)

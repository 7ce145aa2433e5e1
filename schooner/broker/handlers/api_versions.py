"""ApiVersions (KIP-511): the versions this broker serves."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from ...protocol.messages import make, sibling
from ...protocol.request_types import ApiVersionsRequest
from ...protocol.response_types import ApiVersionsResponse, response_for
from ...protocol.unsupported import api_version_list
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import NO_THROTTLE

# KIP-584 features, each finalized at its highest level: transaction.version 2 is transactions v2
# (KIP-890), which clients that know it use (EndTxn v5, Produce v12, TxnOffsetCommit v5); 1 and 0 are
# the older protocol, served too. share.version 1 turns share groups (KIP-932) on, as in Kafka 4.1+:
# clients look for it before they use ShareGroupHeartbeat.
FEATURES = {"transaction.version": (0, 2), "share.version": (0, 1)}
FEATURES_EPOCH = 1


async def handle_api_versions(
    ctx: BrokerContext, body: ApiVersionsRequest, scope: RequestScope
) -> ApiVersionsResponse:
    cls = response_for(body)
    supported, finalized = (), ()
    if body.__version__ >= 3:
        supported = tuple(
            make(sibling(cls, "SupportedFeatureKey"), name=n, min_version=lo, max_version=hi)
            for n, (lo, hi) in FEATURES.items()
        )
        finalized = tuple(
            make(sibling(cls, "FinalizedFeatureKey"), name=n, min_version_level=hi, max_version_level=hi)
            for n, (lo, hi) in FEATURES.items()
        )
    return make(
        cls,
        error_code=ErrorCode.none,
        api_keys=api_version_list(cls),
        throttle_time=NO_THROTTLE,
        supported_features=supported,
        finalized_features_epoch=FEATURES_EPOCH if finalized else -1,
        finalized_features=finalized,
        zk_migration_ready=False,
    )

"""ApiVersions (KIP-511): the versions this broker serves."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ...protocol.apis import SUPPORTED_VERSIONS, response_type
from ...protocol.messages import make, sibling
from ..context import BrokerContext


def _api_list(resp_cls: type) -> tuple[Any, ...]:
    entry = sibling(resp_cls, "ApiVersion")
    return tuple(
        entry(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(SUPPORTED_VERSIONS.items())
    )


def unsupported_version_response() -> Any:
    """The v0 answer to a version we do not know, listing ours so the client can pick."""
    cls = response_type(18, 0)
    return make(cls, error_code=ErrorCode.unsupported_version, api_keys=_api_list(cls))


async def handle_api_versions(ctx: BrokerContext, body: Any) -> Any:
    cls = response_type(18, body.__version__)
    return make(
        cls,
        error_code=ErrorCode.none,
        api_keys=_api_list(cls),
        throttle_time=_zero(),
        supported_features=(),
        finalized_features_epoch=-1,
        finalized_features=(),
        zk_migration_ready=False,
    )


def _zero() -> Any:
    import datetime

    return datetime.timedelta(0)

"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics; broker configs are static; group
configs are group_configs.py's."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, TypeVar, cast

from kio.schema.errors import ErrorCode
from kio.static.protocol import Entity

from ...config import Settings
from ...protocol.messages import make, sibling
from ...protocol.request_types import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from ...protocol.response_types import (
    AlterConfigsResponse,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
    response_for,
)
from ...security.acls import CLUSTER_NAME, AclOperation, ResourceType
from ...storage.cluster import format_endpoints
from ...storage.topics.config import (
    CONFIG_DEFS,
    REMOTE_STORAGE,
    SEQUENCE_BITS,
    ConfigSource,
    ConfigType,
    ConfigValue,
    InvalidConfig,
    check_together,
    effective,
    valid_topic_name,
)
from ...storage.topics.metadata import Topic, UnknownTopic
from ..context import BrokerContext
from ..metadata.internal_topics import READ_ONLY, internal_topic, is_internal
from ..net.refusals import refused
from ..net.session import RequestScope
from ..tiering.configs import tiering_config_values
from .common import ADMIN_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS
from .group_configs import GROUP, Change, alter_group, describe_group
from .topic_configs import check_config, topic_config_values

log = logging.getLogger(__name__)

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8

DYNAMIC_TOPIC_CONFIG = ConfigSource.DYNAMIC_TOPIC_CONFIG
STATIC_BROKER_CONFIG = ConfigSource.STATIC_BROKER_CONFIG
DEFAULT_CONFIG = ConfigSource.DEFAULT_CONFIG

# IncrementalAlterConfigs operations.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

# Control-plane changes that could not reach Redis: the client may retry.
STATIC_BROKER_MESSAGE = (
    "broker configs are static in Schooner: set them in the broker's config file or environment and restart"
)


def _unset(settings: Settings, *names: str) -> bool:
    """Whether the operator gave none of these settings (and so Kafka would say DEFAULT_CONFIG). A value
    unlike the default was given even where load() did not record it (Settings built in code)."""
    stock = Settings()
    return all(n not in settings.explicit and getattr(settings, n) == getattr(stock, n) for n in names)


def _broker_config_values(ctx: BrokerContext) -> list[ConfigValue]:
    settings, defaults = ctx.settings, ctx.topic_defaults

    def static(
        name: str, value: str, config_type: int, is_default: bool = False, doc: str | None = None
    ) -> ConfigValue:
        source = DEFAULT_CONFIG if is_default else STATIC_BROKER_CONFIG
        return ConfigValue(name, value, source, True, config_type, ((name, value, source),), doc)

    values = [
        # An id allocated from Redis, and addresses derived from the listeners, were not set.
        static("broker.id", str(ctx.me.broker_id), ConfigType.INT, _unset(settings, "broker_id")),
        static(
            "advertised.listeners",
            format_endpoints(ctx.me.endpoints),
            ConfigType.LIST,
            _unset(settings, "advertise", "advertised_listeners"),
        ),
        static(
            "num.partitions",
            str(settings.default_partitions),
            ConfigType.INT,
            _unset(settings, "default_partitions"),
        ),
        static(
            "default.replication.factor",
            "1",
            ConfigType.INT,
            True,
            "Redis keeps the data: one copy per partition.",
        ),
        static(
            "auto.create.topics.enable",
            str(settings.auto_create_topics).lower(),
            ConfigType.BOOLEAN,
            _unset(settings, "auto_create_topics"),
        ),
        static(
            "socket.request.max.bytes",
            str(settings.max_request_bytes),
            ConfigType.INT,
            _unset(settings, "max_request_bytes"),
        ),
        static(
            "producer.id.expiration.ms",
            str(settings.producer_id_expiration_ms),
            ConfigType.INT,
            _unset(settings, "producer_id_expiration_ms"),
            "An idempotent producer that has not appended to a partition for this long is forgotten "
            "there (setting producer_id_expiration_ms).",
        ),
        static(
            "log.retention.check.interval.ms",
            str(settings.log_retention_check_interval_ms),
            ConfigType.LONG,
            _unset(settings, "log_retention_check_interval_ms"),
            "How often the retention pass applies retention.ms and retention.bytes to every partition "
            "(setting log_retention_check_interval_ms).",
        ),
        *tiering_config_values(settings),
    ]
    for name, definition in CONFIG_DEFS.items():
        if not definition.effective:
            continue
        value = str(defaults.get(name, definition.default))
        values.append(
            static(
                definition.broker_name, value, definition.kind, name not in defaults, definition.documentation
            )
        )
    return values


# -- DescribeConfigs ------------------------------------------------------------------------------


class _DescribedResource(Protocol):
    """DescribeConfigsResource, as every served version has it."""

    @property
    def resource_type(self) -> int: ...
    @property
    def resource_name(self) -> str: ...


async def handle_describe_configs(
    ctx: BrokerContext, body: DescribeConfigsRequest, scope: RequestScope
) -> DescribeConfigsResponse:
    resp = response_for(body)
    synonyms = bool(body.include_synonyms)
    docs = bool(getattr(body, "include_documentation", False))
    results = []
    for resource in body.resources:
        code, message, found = await _describe_resource(ctx, scope, resource)
        wanted = set(resource.configuration_keys or ())
        configs = tuple(
            _config_entry(resp, c, synonyms, docs) for c in found if c.name in wanted or not wanted
        )
        results.append(
            make(
                sibling(resp, "DescribeConfigsResult"),
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return make(resp, throttle_time=NO_THROTTLE, results=tuple(results))


async def _config_denial(
    ctx: BrokerContext, scope: RequestScope, resource_type: int, name: str, op: AclOperation
) -> tuple[ErrorCode, str] | None:
    """Kafka's check of a config resource: `op` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic, the
    group, or (broker and broker-logger configs) the cluster."""
    if resource_type == TOPIC:
        kind, code = ResourceType.TOPIC, ErrorCode.topic_authorization_failed
    elif resource_type == GROUP:
        kind, code = ResourceType.GROUP, ErrorCode.group_authorization_failed
    elif resource_type in (BROKER, BROKER_LOGGER):
        kind, code, name = ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed, CLUSTER_NAME
    else:
        return None
    if await ctx.access.authorizer.allowed(op, kind, name, scope):
        return None
    return code, f"The principal may not {op.name} of {kind.name} {name!r}"


async def _describe_resource(
    ctx: BrokerContext, scope: RequestScope, resource: _DescribedResource
) -> tuple[ErrorCode, str | None, list[ConfigValue]]:
    name = resource.resource_name
    denied = await _config_denial(ctx, scope, resource.resource_type, name, AclOperation.DESCRIBE_CONFIGS)
    if denied is not None:
        return *denied, []
    if resource.resource_type == TOPIC:
        if not valid_topic_name(name):
            return ErrorCode.invalid_topic_exception, f"Topic name {name!r} is illegal", []
        try:
            topic = internal_topic(name, ctx.topic_defaults) or await ctx.topics.load(name)
        except STORAGE_ERRORS as exc:
            return ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}", []
        if topic is None:
            return ErrorCode.unknown_topic_or_partition, f"Topic {name!r} does not exist", []
        values = topic_config_values(topic.overrides, ctx.topic_defaults, topic.fixed_configs)
        return ErrorCode.none, None, values
    if resource.resource_type == GROUP:
        return await describe_group(ctx, name)
    if resource.resource_type == BROKER:
        if name not in ("", str(ctx.me.broker_id)):
            return ErrorCode.invalid_request, f"This is broker {ctx.me.broker_id}, not broker {name!r}", []
        return ErrorCode.none, None, _broker_config_values(ctx)
    return ErrorCode.invalid_request, f"Config resource type {resource.resource_type} is not supported", []


def _config_entry(resp: type[DescribeConfigsResponse], c: ConfigValue, synonyms: bool, docs: bool) -> Entity:
    return make(
        sibling(resp, "DescribeConfigsResourceResult"),
        name=c.name,
        value=c.value,
        read_only=c.read_only,
        config_source=c.source,
        is_sensitive=False,
        synonyms=(
            tuple(
                make(sibling(resp, "DescribeConfigsSynonym"), name=n, value=v, source=s)
                for n, v, s in c.synonyms
            )
            if synonyms
            else ()
        ),
        config_type=c.config_type,
        documentation=c.documentation if docs else None,
    )


# -- AlterConfigs and IncrementalAlterConfigs ---------------------------------------------------------


class _BadRequest(Exception):
    pass


# The resources of both APIs, as every served version has them.
class _AlterableConfig(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str | None: ...


class _IncrementalConfig(_AlterableConfig, Protocol):
    @property
    def config_operation(self) -> int: ...


class _AlterResource(Protocol):
    @property
    def resource_type(self) -> int: ...
    @property
    def resource_name(self) -> str: ...
    @property
    def configs(self) -> Sequence[_AlterableConfig]: ...


async def handle_alter_configs(
    ctx: BrokerContext, body: AlterConfigsRequest, scope: RequestScope
) -> AlterConfigsResponse:
    """Legacy AlterConfigs: the given configs replace every override the topic had."""
    return await _alter(ctx, scope, body, response_for(body), incremental=False)


async def handle_incremental_alter_configs(
    ctx: BrokerContext, body: IncrementalAlterConfigsRequest, scope: RequestScope
) -> IncrementalAlterConfigsResponse:
    return await _alter(ctx, scope, body, response_for(body), incremental=True)


# AlterConfigs and IncrementalAlterConfigs answer alike, each in its own response.
A = TypeVar("A", AlterConfigsResponse, IncrementalAlterConfigsResponse)


async def _alter(
    ctx: BrokerContext,
    scope: RequestScope,
    body: AlterConfigsRequest | IncrementalAlterConfigsRequest,
    resp: type[A],
    incremental: bool,
) -> A:
    seen = Counter((r.resource_type, r.resource_name) for r in body.resources)
    responses = []
    for resource in body.resources:
        message: str | None
        denied = await _config_denial(
            ctx, scope, resource.resource_type, resource.resource_name, AclOperation.ALTER_CONFIGS
        )
        if seen[(resource.resource_type, resource.resource_name)] > 1:
            code, message = ErrorCode.invalid_request, "Duplicate resource in the request"
        elif denied is not None:
            code, message = denied
        elif resource.resource_type == BROKER:
            code, message = ErrorCode.invalid_request, STATIC_BROKER_MESSAGE
        elif resource.resource_type == GROUP:
            changes, only = _changes(resource, incremental), bool(body.validate_only)
            code, message = await alter_group(ctx, resource.resource_name, changes, not incremental, only)
        elif resource.resource_type != TOPIC:
            code, message = (
                ErrorCode.invalid_request,
                f"Resource type {resource.resource_type} is unsupported",
            )
        else:
            try:
                code, message = await _alter_topic(ctx, resource, incremental, bool(body.validate_only))
            except STORAGE_ERRORS as exc:
                code, message = ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}"
        if code in (ErrorCode.invalid_config, ErrorCode.invalid_request):
            api = "INCREMENTAL_ALTER_CONFIGS" if incremental else "ALTER_CONFIGS"
            name, kind = resource.resource_name, resource.resource_type
            reason = f"resource {name!r} (type {kind}): {code.name.upper()}: {message}"
            refused(log, api, reason, resource=resource.resource_name, error=code.name.upper(), scope=scope)
        responses.append(
            make(
                sibling(resp, "AlterConfigsResourceResponse"),
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    response_cls = resp if incremental else resp
    return make(response_cls, throttle_time=NO_THROTTLE, responses=tuple(responses))


async def _alter_topic(
    ctx: BrokerContext, resource: _AlterResource, incremental: bool, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    name = resource.resource_name
    if not valid_topic_name(name):
        return ErrorCode.invalid_topic_exception, f"Topic name {name!r} is illegal"
    repeated = sorted(n for n, count in Counter(c.name for c in resource.configs).items() if count > 1)
    if repeated:
        return ErrorCode.invalid_request, f"Duplicate config keys: {', '.join(repeated)}"
    if is_internal(name):
        return ErrorCode.invalid_request, f"Topic {name!r} is an {READ_ONLY}"
    topic = await ctx.topics.fresh(name)
    if topic is None:
        return ErrorCode.unknown_topic_or_partition, f"Topic {name!r} does not exist"
    try:
        if incremental:  # so the resource is IncrementalAlterConfigs', whose configs have operations
            changes = cast(Sequence[_IncrementalConfig], resource.configs)
            set_configs, deletes = _incremental_changes(topic, changes)
        else:
            set_configs, deletes = _replacement(topic, resource.configs), []
        kept = {k: v for k, v in topic.overrides.items() if k not in deletes} if incremental else {}
        after = effective({**kept, **set_configs}, ctx.topic_defaults)
        check_together(after, ctx.tiering.available)
        if topic.remote_storage and after[REMOTE_STORAGE].lower() != "true":
            # As Kafka without remote.log.delete.on.disable: the cold records would be lost to readers.
            raise InvalidConfig(f"{REMOTE_STORAGE} cannot be turned off on a tiered topic")
    except InvalidConfig as exc:
        return ErrorCode.invalid_config, str(exc)
    except _BadRequest as exc:
        return ErrorCode.invalid_request, str(exc)
    if validate_only:
        return ErrorCode.none, None
    try:
        await ctx.topics.alter(
            name,
            set_configs=set_configs,
            delete_configs=deletes,
            replace_configs=not incremental,
        )
    except UnknownTopic:
        return ErrorCode.unknown_topic_or_partition, f"Topic {name!r} does not exist"
    return ErrorCode.none, None


def _changes(resource: _AlterResource, incremental: bool) -> list[Change]:
    """A resource's configs as (name, operation, value); AlterConfigs' are all SET."""
    if incremental:  # so the resource is IncrementalAlterConfigs', whose configs have operations
        configs = cast(Sequence[_IncrementalConfig], resource.configs)
        return [(c.name, c.config_operation, c.value) for c in configs]
    return [(c.name, SET, c.value) for c in resource.configs]


def _check_topic_value(topic: Topic, name: str, value: str | None) -> None:
    check_config(name, value)
    fixed = topic.fixed_configs
    if name in fixed and str(value or CONFIG_DEFS[name].default) != fixed[name]:
        raise InvalidConfig(f"{name} is fixed when a topic is created; {topic.name!r} has {fixed[name]}")


def _replacement(topic: Topic, configs: Sequence[_AlterableConfig]) -> dict[str, str]:
    new: dict[str, str] = {}
    for c in configs:
        _check_topic_value(topic, c.name, c.value)
        # SEQUENCE_BITS is kept in the topic's own field, never as an override; a null value was refused.
        if c.name != SEQUENCE_BITS and c.value is not None:
            new[c.name] = c.value
    return new


def _incremental_changes(
    topic: Topic, configs: Sequence[_IncrementalConfig]
) -> tuple[dict[str, str], list[str]]:
    sets: dict[str, str] = {}
    deletes: list[str] = []
    for c in configs:
        name, op = c.name, c.config_operation
        if op not in (SET, DELETE, APPEND, SUBTRACT):
            raise _BadRequest(f"Unknown config operation {op} for {name}")
        if name not in CONFIG_DEFS:
            raise InvalidConfig(f"Unknown topic config name: {name}")
        if name == SEQUENCE_BITS and op != SET:
            raise InvalidConfig(f"{SEQUENCE_BITS} is fixed when the topic is created")
        if op == DELETE:
            deletes.append(name)
            continue
        value = c.value
        if op in (APPEND, SUBTRACT):
            if CONFIG_DEFS[name].kind != ConfigType.LIST:
                raise InvalidConfig(f"Config value append or subtract is not allowed for config key {name}")
            current = [v.strip() for v in topic.configs.get(name, "").split(",") if v.strip()]
            items = [v.strip() for v in (value or "").split(",") if v.strip()]
            if op == APPEND:
                current += [v for v in items if v not in current]
            else:
                current = [v for v in current if v not in items]
            value = ",".join(current)
        _check_topic_value(topic, name, value)
        if name != SEQUENCE_BITS and value is not None:
            sets[name] = value
    return sets, deletes

"""Client quotas (KIP-546): what DescribeClientQuotas and AlterClientQuotas keep. Every broker enforces
them (broker/access/quotas.py, with the windows of security/quotas.py); each change is published on the quotas
channel, so that every broker reloads them at once.

An entity is one or more (type, name) components, types `user`, `client-id` and `ip`; a name of None
is that type's default entity. Kafka allows the combinations {user}, {client-id}, {user, client-id}
and {ip}, each with its own quota keys. Every key holds a double; byte rates and the connection rate
must be whole numbers.

Each entity with at least one quota is a hash of quota key -> value (decimal text) under an id that
spells its components in a fixed order, `user=alice,client-id=app-1`, with names percent-encoded
and `<default>` for a default name; a set lists those ids. docs/key-layout.md documents both keys.
Quotas are deployment-wide: callers pass the base keyspace, never a tenant's.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote

from .keys import Keyspace
from .redis.calls import Call, Redis, Steps, command, script, text
from .topics.notices import ChannelNotices

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)  # the order of components in an entity id
DEFAULT_NAME = "<default>"  # in an entity id; '<' and '>' of real names are percent-encoded

# A component: (entity type, name or None for the default). An Entity lists them in ENTITY_TYPES order.
Component = tuple[str, str | None]
Entity = tuple[Component, ...]

# Quota key -> whether its value must be a whole number (Kafka's LONG and INT configs).
CLIENT_QUOTAS = {
    "producer_byte_rate": True,
    "consumer_byte_rate": True,
    "request_percentage": False,
    "controller_mutation_rate": False,
}
IP_QUOTAS = {"connection_creation_rate": True}
QUOTA_KEYS = {**CLIENT_QUOTAS, **IP_QUOTAS}

MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_SPECIFIED = 2


class InvalidQuota(ValueError):
    """A request Kafka refuses with INVALID_REQUEST; the text is the error message."""


class UnknownEntityType(ValueError):
    """A describe filter on an entity type Kafka does not know: it answers UNSUPPORTED_VERSION."""


# -- validation (Kafka's rules for AlterClientQuotas) ---------------------------------------------
def entity_of(components: Iterable[Component]) -> Entity:
    """The entity of a request's components, checked; raises InvalidQuota."""
    found: dict[str, str | None] = {}
    for entity_type, name in components:
        if entity_type in found:
            raise InvalidQuota(f"Invalid client quota entity, duplicate entity entry {entity_type}")
        if entity_type not in ENTITY_TYPES:
            raise InvalidQuota(f"Unhandled client quota entity type: {entity_type}")
        if name == "":
            raise InvalidQuota(f"Empty {entity_type} not supported")
        found[entity_type] = name
    if not found:
        raise InvalidQuota("Invalid empty client quota entity")
    if IP in found:
        if len(found) > 1:
            raise InvalidQuota(
                "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
            )
        if not _valid_ip(found[IP]):
            raise InvalidQuota(f"{found[IP]} is not a valid IP or resolvable host.")
    return tuple((t, found[t]) for t in ENTITY_TYPES if t in found)


def _valid_ip(name: str | None) -> bool:
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _keys_for(entity: Entity) -> Mapping[str, bool]:
    return IP_QUOTAS if entity[0][0] == IP else CLIENT_QUOTAS


def check_key(entity: Entity, key: str) -> None:
    """Raises InvalidQuota when the key is not a quota of this kind of entity."""
    if key not in _keys_for(entity):
        raise InvalidQuota(f"Invalid configuration key {key}")


def check_value(entity: Entity, key: str, value: float) -> None:
    """Raises InvalidQuota when the value does not fit the key (a whole number for rates in bytes or
    connections; always a finite number)."""
    check_key(entity, key)
    if not math.isfinite(value):
        raise InvalidQuota(f"Configuration {key} must be a finite number")
    if _keys_for(entity)[key] and abs(round(value) - value) > 1e-6:
        raise InvalidQuota(f"Configuration {key} must be a Long value")


# -- entity ids -------------------------------------------------------------------------------------
def entity_id(entity: Entity) -> str:
    return ",".join(
        f"{entity_type}={DEFAULT_NAME if name is None else quote(name, safe='')}"
        for entity_type, name in entity
    )


def parse_entity_id(entity_text: str) -> Entity:
    components: list[Component] = []
    for part in entity_text.split(","):
        entity_type, _, name = part.partition("=")
        components.append((entity_type, None if name == DEFAULT_NAME else unquote(name)))
    return tuple(components)


# -- describe filters ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Filter:
    """A DescribeClientQuotas filter: exact names (None: the default) and types of any name."""

    exact: Mapping[str, str | None]
    any_name: frozenset[str]
    strict: bool

    def matches(self, entity: Entity) -> bool:
        components = dict(entity)
        if self.strict and len(components) != len(self.exact) + len(self.any_name):
            return False
        for entity_type, name in self.exact.items():
            if entity_type not in components or components[entity_type] != name:
                return False
        return all(entity_type in components for entity_type in self.any_name)


def filter_of(components: Iterable[tuple[str, int, str | None]], strict: bool) -> Filter:
    """The filter of (entity type, match type, match) components. Raises InvalidQuota, or
    UnknownEntityType for a type other than user, client-id and ip, as Kafka's checks do.

    MATCH_SPECIFIED needs the entity to have a component of that type, default or not: Kafka 4's
    metadata image matches it that way."""
    exact: dict[str, str | None] = {}
    any_name: set[str] = set()
    for entity_type, match_type, match in components:
        if not entity_type:
            raise InvalidQuota("Invalid empty entity type.")
        if entity_type in exact or entity_type in any_name:
            raise InvalidQuota(f"Entity type {entity_type} cannot appear more than once in the filter.")
        if entity_type not in ENTITY_TYPES:
            raise UnknownEntityType(f"Unsupported entity type {entity_type}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise InvalidQuota("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[entity_type] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise InvalidQuota("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[entity_type] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise InvalidQuota(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                )
            any_name.add(entity_type)
        else:
            raise InvalidQuota(f"Unknown match type {match_type}")
    named = set(exact) | any_name
    if IP in named and named & {USER, CLIENT_ID}:
        raise InvalidQuota(
            "Invalid entity filter component combination. IP filter component should not be used "
            "with user or clientId filter component."
        )
    return Filter(exact, frozenset(any_name), strict)


@dataclass(frozen=True, slots=True)
class QuotaChange:
    """What one AlterClientQuotas entry does to its entity."""

    entity: Entity
    set_values: Mapping[str, float]
    remove: tuple[str, ...]


# -- round trips --------------------------------------------------------------------------------------
def alter(ks: Keyspace, entity: Entity, set_values: Mapping[str, float], remove: Iterable[str]) -> Call[int]:
    """Sets and removes one entity's quotas in one script; returns how many quotas it has after."""
    key_id = entity_id(entity)
    pairs = [item for key, value in set_values.items() for item in (key, repr(float(value)))]
    return script(
        "quotas_alter",
        [ks.quota_entity(key_id), ks.quota_entities],
        [key_id, ks.quotas_channel, len(set_values), *pairs, *remove],
        parse=int,
    )


def load_all(ks: Keyspace) -> Steps[dict[Entity, dict[str, float]]]:
    """Every entity that has quotas, with them. Two round trips: the index, then every entity's hash."""
    (ids,) = yield [command("SMEMBERS", ks.quota_entities)]
    names = sorted(text(raw) for raw in ids)
    if not names:
        return {}
    hashes = yield [command("HGETALL", ks.quota_entity(name)) for name in names]
    found: dict[Entity, dict[str, float]] = {}
    for name, values in zip(names, hashes, strict=True):
        if values:  # an entity emptied between the two round trips is left out
            found[parse_entity_id(name)] = {text(k): float(text(v)) for k, v in values.items()}
    return found


class QuotaNotices(ChannelNotices):
    """The ids of entities whose quotas changed (next() gives the id as bytes)."""

    def __init__(self, redis: Redis, ks: Keyspace, quiet: float) -> None:
        super().__init__(redis, ks.quotas_channel, quiet)

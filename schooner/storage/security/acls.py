"""ACL bindings: what CreateAcls, DescribeAcls and DeleteAcls keep, and what the broker's authorizer reads.

Under a keyspace (a tenant's ACLs live under its own prefix, beside its topics and groups):
- `<prefix>:{acls}:bindings`, a set with one member per binding, the JSON array
  [resource_type, pattern_type, name, principal, host, operation, permission] with Kafka's codes,
  e.g. [2,3,"orders","User:alice","*",3,3] (ALLOW User:alice from any host to READ topic orders);
- `<prefix>:{acls}:version`, a counter that every change bumps;
- and every change PUBLISHes the new version on `<prefix>:acls-changed`.
A set makes a binding given twice one binding, as Kafka does. Brokers cache the bindings with the
version they read; a notice, or a version that moved, makes them read the set again.
docs/key-layout.md documents the keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ...security.acls import AclBinding, AclOperation, AclSet, PatternType, PermissionType, ResourceType
from ..keys import Keyspace
from ..redis.calls import Call, Steps, command, script, text


def encode_binding(b: AclBinding) -> str:
    fields = [int(b.resource_type), int(b.pattern_type), b.name, b.principal, b.host]
    return json.dumps(
        [*fields, int(b.operation), int(b.permission)], separators=(",", ":"), ensure_ascii=False
    )


def decode_binding(raw: bytes | str) -> AclBinding | None:
    """The binding, or None for a member this version cannot read (skipped, never fatal)."""
    try:
        rtype, pattern, name, principal, host, op, perm = json.loads(raw)
        return AclBinding(
            ResourceType(rtype),
            str(name),
            PatternType(pattern),
            str(principal),
            str(host),
            AclOperation(op),
            PermissionType(perm),
        )
    except (ValueError, TypeError):
        return None


def _version(reply: Any) -> int:
    return int(text(reply) or 0)


def _bindings(reply: Any) -> AclSet:
    found = (decode_binding(raw) for raw in reply or ())
    return AclSet(frozenset(b for b in found if b is not None))


def version(ks: Keyspace) -> Call[int]:
    """The bindings' version: 0 until the first change."""
    return command("GET", ks.acl_version, parse=_version)


def load(ks: Keyspace) -> Steps[tuple[int, AclSet]]:
    """The version and the bindings, in one round trip. The version is read first: a change between the
    two reads leaves a version older than the set, which the next version check reloads."""
    got, bindings = yield [version(ks), command("SMEMBERS", ks.acl_bindings, parse=_bindings)]
    return got, bindings


def _alter(
    ks: Keyspace, add: Iterable[AclBinding], remove: Iterable[AclBinding]
) -> Call[tuple[int, int, int]]:
    adding = sorted({encode_binding(b) for b in add})
    removing = sorted({encode_binding(b) for b in remove})
    args = [ks.acls_channel, len(adding), *adding, *removing]
    return script(
        "acls_alter",
        [ks.acl_bindings, ks.acl_version],
        args,
        parse=lambda r: (int(r[0]), int(r[1]), int(r[2])),
    )


def add(ks: Keyspace, bindings: Iterable[AclBinding]) -> Call[tuple[int, int, int]]:
    """Adds the bindings (one already there stays one); returns (version, added, removed)."""
    return _alter(ks, bindings, ())


def remove(ks: Keyspace, bindings: Iterable[AclBinding]) -> Call[tuple[int, int, int]]:
    """Removes the bindings; returns (version, added, removed)."""
    return _alter(ks, (), bindings)

"""Kafka's ACL model, without I/O: bindings, the filters of DescribeAcls and DeleteAcls, and the decision
whether a principal may perform an operation on a resource.

A binding says: principal P from host H is ALLOWed (or DENYed) operation O on resources of type T whose
name is N (LITERAL; N = "*" is every name) or starts with N (PREFIXED). A decision on (P, H, O, T, name):
- a super user is always allowed;
- the bindings that match the resource are those of type T that name it (literal, "*", or a prefix of
  it); if there are none at all (for any principal or operation), the answer is
  `allow_everyone_if_no_acl_found`;
- of those, the ones for P (or "User:*") and H (or "*") count: a DENY of O (or ALL) denies, whatever
  else matches; otherwise an ALLOW of O, of ALL, or of an operation that implies O allows;
- anything else is denied.
ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE; ALLOW of ALTER_CONFIGS implies DESCRIBE_CONFIGS.
A DENY implies nothing beyond its own operation (and ALL denies everything).

The numeric codes are Kafka's (its AclOperation, ResourceType, PatternType and AclPermissionType), as
they travel in CreateAcls, DescribeAcls and DeleteAcls and in the *_authorized_operations bit fields.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field

CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource
WILDCARD = "*"  # a LITERAL resource name, or a host, that matches every one
WILDCARD_PRINCIPAL = "User:*"
# Kafka's "authorized operations were not asked for" value of the *_authorized_operations fields.
OPERATIONS_OMITTED = -2147483648


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only: any pattern type, the name compared exactly
    MATCH = 2  # filters only: every binding that would match the named resource
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class PermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    DENY = 2
    ALLOW = 3


Op = AclOperation
# An ALLOW of the key also allows these operations.
IMPLIED: dict[AclOperation, frozenset[AclOperation]] = {
    Op.READ: frozenset({Op.DESCRIBE}),
    Op.WRITE: frozenset({Op.DESCRIBE}),
    Op.DELETE: frozenset({Op.DESCRIBE}),
    Op.ALTER: frozenset({Op.DESCRIBE}),
    Op.ALTER_CONFIGS: frozenset({Op.DESCRIBE_CONFIGS}),
}

# The operations that mean something on each resource type: what *_authorized_operations reports.
OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE,
                         Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.GROUP: (Op.READ, Op.DELETE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Op.CREATE, Op.ALTER, Op.DESCRIBE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS,
                           Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE),
    ResourceType.TRANSACTIONAL_ID: (Op.WRITE, Op.DESCRIBE, Op.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}  # fmt: skip


def _member(cls: type[enum.IntEnum], code: int) -> enum.IntEnum:
    """The enum member of a wire code; an unknown code is UNKNOWN (0), as Kafka reads it."""
    try:
        return cls(code)
    except ValueError:
        return cls(0)


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType

    def covers(self, name: str) -> bool:
        """Whether this binding's pattern matches the resource name."""
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name == name or self.name == WILDCARD


@dataclass(frozen=True, slots=True)
class AclFilter:
    """A DescribeAcls or DeleteAcls filter: None (for names, principals and hosts) and ANY match all."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, b.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, b.pattern_type):
            return False
        if self.name is not None:
            if self.pattern_type == PatternType.MATCH:
                if not b.covers(self.name):
                    return False
            elif self.name != b.name:
                return False
        return (
            self.principal in (None, b.principal)
            and self.host in (None, b.host)
            and self.operation in (AclOperation.ANY, b.operation)
            and self.permission in (PermissionType.ANY, b.permission)
        )


class InvalidAcl(ValueError):
    """A binding or filter Kafka refuses with INVALID_REQUEST; the message says why."""


def binding_from_wire(
    resource_type: int,
    name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission: int,
) -> AclBinding:
    """A CreateAcls creation as a binding, checked as Kafka checks one; raises InvalidAcl."""
    rtype = ResourceType(_member(ResourceType, resource_type))
    if rtype == ResourceType.CLUSTER and name != CLUSTER_NAME:
        raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not name:
        raise InvalidAcl("Invalid empty resource name")
    if rtype in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAcl(f"Invalid resourceType {rtype.name}")
    pattern = PatternType(_member(PatternType, pattern_type))
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAcl(f"Invalid patternType {pattern.name}")
    op = AclOperation(_member(AclOperation, operation))
    if op in (Op.UNKNOWN, Op.ANY):
        raise InvalidAcl(f"Invalid operation {op.name}")
    perm = PermissionType(_member(PermissionType, permission))
    if perm in (PermissionType.UNKNOWN, PermissionType.ANY):
        raise InvalidAcl(f"Invalid permissionType {perm.name}")
    check_principal(principal)
    if not host:
        raise InvalidAcl("Host pattern cannot be null or empty")
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def check_principal(principal: str) -> None:
    """Kafka's principal form, "Type:name" (User:alice, User:*); raises InvalidAcl otherwise."""
    kind, colon, _ = principal.partition(":")
    if not colon:
        raise InvalidAcl(
            f"Could not parse principal from `{principal}` (no colon is present separating the "
            "principal type from the principal name)"
        )
    if not kind:
        raise InvalidAcl(f"Could not parse principal from `{principal}` (the principal type is empty)")


def filter_from_wire(
    resource_type: int,
    name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission: int,
) -> AclFilter:
    """A DescribeAcls or DeleteAcls filter; raises InvalidAcl for an UNKNOWN (or unknown) element."""
    rtype = ResourceType(_member(ResourceType, resource_type))
    pattern = PatternType(_member(PatternType, pattern_type))
    op = AclOperation(_member(AclOperation, operation))
    perm = PermissionType(_member(PermissionType, permission))
    unknown = [
        kind
        for kind, value in (("resourceType", rtype), ("patternType", pattern), ("operation", op),
                            ("permissionType", perm))
        if value == 0
    ]  # fmt: skip
    if unknown:
        raise InvalidAcl(f"The filter contains UNKNOWN elements: {', '.join(unknown)}")
    # A principal filter is compared as a string, as Kafka does: one that is not "Type:name" (such as
    # "*") is no error, it just matches no stored binding, whose principals all have that form.
    return AclFilter(rtype, name, pattern, principal or None, host or None, op, perm)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks: the principal and the host (IP address) of the connection."""

    principal: str
    host: str


@dataclass(slots=True)
class AclSet:
    """The bindings in force, indexed for decisions; decisions are remembered until the set changes."""

    bindings: frozenset[AclBinding] = frozenset()
    _literal: dict[tuple[ResourceType, str], list[AclBinding]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _prefixed: dict[ResourceType, list[AclBinding]] = field(default_factory=dict, compare=False, repr=False)
    _memo: dict[tuple[str, str, AclOperation, ResourceType, str, bool], bool] = field(
        default_factory=dict, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        for b in self.bindings:
            if b.pattern_type == PatternType.PREFIXED:
                self._prefixed.setdefault(b.resource_type, []).append(b)
            else:
                self._literal.setdefault((b.resource_type, b.name), []).append(b)

    def __iter__(self) -> Iterator[AclBinding]:
        return iter(self.bindings)

    def __len__(self) -> int:
        return len(self.bindings)

    def matching(self, f: AclFilter) -> list[AclBinding]:
        return sorted((b for b in self.bindings if f.matches(b)), key=sort_key)

    def on_resource(self, rtype: ResourceType, name: str) -> list[AclBinding]:
        """Every binding whose pattern matches the resource, for any principal or operation."""
        found = list(self._literal.get((rtype, name), ()))
        if name != WILDCARD:
            found += self._literal.get((rtype, WILDCARD), ())
        found += [b for b in self._prefixed.get(rtype, ()) if name.startswith(b.name)]
        return found

    def authorize(
        self,
        caller: Caller,
        op: AclOperation,
        rtype: ResourceType,
        name: str,
        allow_if_no_acl: bool = False,
    ) -> bool:
        """Kafka's decision, super users aside (the caller checks those first)."""
        key = (caller.principal, caller.host, op, rtype, name, allow_if_no_acl)
        known = self._memo.get(key)
        if known is not None:
            return known
        decision = self._decide(caller, op, rtype, name, allow_if_no_acl)
        if len(self._memo) >= 50_000:  # bounded: a client naming endless topics cannot grow it
            self._memo.clear()
        self._memo[key] = decision
        return decision

    def _decide(
        self, caller: Caller, op: AclOperation, rtype: ResourceType, name: str, allow_if_no_acl: bool
    ) -> bool:
        on_resource = self.on_resource(rtype, name)
        if not on_resource:
            return allow_if_no_acl
        allowed = False
        for b in on_resource:
            if not _applies_to(b, caller):
                continue
            if b.permission == PermissionType.DENY:
                if b.operation in (op, Op.ALL):
                    return False
            elif b.operation in (op, Op.ALL) or op in IMPLIED.get(b.operation, ()):
                allowed = True
        return allowed

    def authorized_operations(
        self, caller: Caller, rtype: ResourceType, name: str, allow_if_no_acl: bool = False
    ) -> set[AclOperation]:
        return {
            op for op in OPERATIONS.get(rtype, ()) if self.authorize(caller, op, rtype, name, allow_if_no_acl)
        }

    def authorize_any(
        self, caller: Caller, op: AclOperation, rtype: ResourceType, allow_if_no_acl: bool = False
    ) -> bool:
        """Whether the caller may perform `op` on some resource of the type (Kafka's
        authorizeByResourceType, KIP-679): an ALLOW that no DENY of the caller covers entirely."""
        # A name no binding of a real resource can match: the wildcard and "no ACL" rules decide it.
        if self.authorize(caller, op, rtype, "\x00", allow_if_no_acl):
            return True
        denied_literal: set[str] = set()
        denied_prefixes: list[str] = []
        allows: list[AclBinding] = []
        for b in self.bindings:
            if b.resource_type != rtype or not _applies_to(b, caller):
                continue
            if b.permission == PermissionType.DENY and b.operation in (op, Op.ALL):
                if b.pattern_type == PatternType.PREFIXED:
                    denied_prefixes.append(b.name)
                else:
                    denied_literal.add(b.name)
            elif b.permission == PermissionType.ALLOW and (
                b.operation in (op, Op.ALL) or op in IMPLIED.get(b.operation, ())
            ):
                allows.append(b)
        if WILDCARD in denied_literal:
            return False
        for b in allows:
            if any(b.name.startswith(p) for p in denied_prefixes):
                continue
            if b.pattern_type == PatternType.LITERAL and b.name in denied_literal:
                continue
            return True
        return False


def _applies_to(b: AclBinding, caller: Caller) -> bool:
    return b.principal in (caller.principal, WILDCARD_PRINCIPAL) and b.host in (caller.host, WILDCARD)


def operations_bits(ops: Iterable[AclOperation]) -> int:
    """Kafka's *_authorized_operations field: bit n set for the operation of code n."""
    bits = 0
    for op in ops:
        bits |= 1 << int(op)
    return bits


def sort_key(b: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    return (b.resource_type, b.name, b.pattern_type, b.principal, b.host, b.operation, b.permission)


def is_super_user(principal: str, super_users: Collection[str]) -> bool:
    return principal in super_users

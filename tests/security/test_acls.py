"""Kafka's ACL model (schooner/security/acls.py): matching, implied operations, DENY over ALLOW, the "no ACL"
rule, filters, wire validation, authorized operations and the by-resource-type question."""

from __future__ import annotations

import pytest

from schooner.security.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    AclOperation,
    AclSet,
    Caller,
    InvalidAcl,
    PatternType,
    PermissionType,
    ResourceType,
    binding_from_wire,
    filter_from_wire,
    operations_bits,
)

Op = AclOperation
ALICE = Caller("User:alice", "10.0.0.1")
BOB = Caller("User:bob", "10.0.0.2")
T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = PermissionType.ALLOW, PermissionType.DENY


def acl(
    rtype: ResourceType = T,
    name: str = "orders",
    op: AclOperation = Op.READ,
    permission: PermissionType = ALLOW,
    principal: str = "User:alice",
    host: str = "*",
    pattern: PatternType = LITERAL,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def acls(*bindings: AclBinding) -> AclSet:
    return AclSet(frozenset(bindings))


def test_a_literal_allow_grants_its_operation_on_its_resource_only() -> None:
    s = acls(acl())
    assert s.authorize(ALICE, Op.READ, T, "orders")
    assert not s.authorize(ALICE, Op.WRITE, T, "orders")
    assert not s.authorize(ALICE, Op.READ, T, "orders2")
    assert not s.authorize(ALICE, Op.READ, G, "orders")  # another resource type
    assert not s.authorize(BOB, Op.READ, T, "orders")


@pytest.mark.parametrize("allowed_op", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_read_write_delete_and_alter_imply_describe(allowed_op: AclOperation) -> None:
    s = acls(acl(op=allowed_op))
    assert s.authorize(ALICE, Op.DESCRIBE, T, "orders")
    assert not s.authorize(ALICE, Op.DESCRIBE_CONFIGS, T, "orders")


def test_alter_configs_implies_describe_configs_and_nothing_else() -> None:
    s = acls(acl(op=Op.ALTER_CONFIGS))
    assert s.authorize(ALICE, Op.DESCRIBE_CONFIGS, T, "orders")
    assert not s.authorize(ALICE, Op.DESCRIBE, T, "orders")
    assert not acls(acl(op=Op.DESCRIBE)).authorize(ALICE, Op.READ, T, "orders")  # no implication upwards


def test_all_allows_every_operation() -> None:
    s = acls(acl(op=Op.ALL))
    assert all(s.authorize(ALICE, op, T, "orders") for op in (Op.READ, Op.WRITE, Op.CREATE, Op.ALTER_CONFIGS))


def test_deny_beats_allow_and_implies_nothing() -> None:
    s = acls(acl(op=Op.ALL), acl(op=Op.WRITE, permission=DENY))
    assert not s.authorize(ALICE, Op.WRITE, T, "orders")
    assert s.authorize(ALICE, Op.READ, T, "orders")
    assert s.authorize(ALICE, Op.DESCRIBE, T, "orders")  # a DENY of WRITE does not deny DESCRIBE
    denied_all = acls(acl(op=Op.READ), acl(op=Op.ALL, permission=DENY))
    assert not denied_all.authorize(ALICE, Op.READ, T, "orders")


def test_prefixed_patterns_match_names_that_start_with_them() -> None:
    s = acls(acl(name="sales-", pattern=PREFIXED))
    assert s.authorize(ALICE, Op.READ, T, "sales-eu")
    assert s.authorize(ALICE, Op.READ, T, "sales-")
    assert not s.authorize(ALICE, Op.READ, T, "sales")
    assert not s.authorize(ALICE, Op.READ, T, "presales-eu")


def test_a_prefixed_deny_beats_a_literal_allow() -> None:
    s = acls(acl(name="sales-eu"), acl(name="sales-", pattern=PREFIXED, permission=DENY))
    assert not s.authorize(ALICE, Op.READ, T, "sales-eu")


def test_the_literal_wildcard_name_matches_every_resource_of_its_type() -> None:
    s = acls(acl(name="*"))
    assert s.authorize(ALICE, Op.READ, T, "anything")
    assert not s.authorize(ALICE, Op.READ, G, "anything")
    # A PREFIXED "*" is a prefix like any other, not a wildcard.
    assert not acls(acl(name="*", pattern=PREFIXED)).authorize(ALICE, Op.READ, T, "anything")


def test_wildcard_principal_and_hosts() -> None:
    s = acls(acl(principal="User:*"))
    assert s.authorize(ALICE, Op.READ, T, "orders") and s.authorize(BOB, Op.READ, T, "orders")
    by_host = acls(acl(host="10.0.0.1"))
    assert by_host.authorize(ALICE, Op.READ, T, "orders")
    assert not by_host.authorize(Caller("User:alice", "10.0.0.9"), Op.READ, T, "orders")
    # A principal type other than User is a different principal.
    assert not acls(acl(principal="Group:alice")).authorize(ALICE, Op.READ, T, "orders")


def test_no_acl_on_the_resource_is_denied_unless_allow_everyone_is_set() -> None:
    s = acls(acl(name="orders"))
    assert not s.authorize(ALICE, Op.READ, T, "payments")
    assert s.authorize(ALICE, Op.READ, T, "payments", allow_if_no_acl=True)
    # An ACL on the resource for someone else counts: then only matching ALLOWs let a caller in.
    assert not s.authorize(BOB, Op.READ, T, "orders", allow_if_no_acl=True)
    assert not acls().authorize(ALICE, Op.READ, T, "payments")


def test_decisions_are_remembered_per_caller_and_resource() -> None:
    s = acls(acl())
    assert s.authorize(ALICE, Op.READ, T, "orders") and not s.authorize(BOB, Op.READ, T, "orders")
    assert s.authorize(ALICE, Op.READ, T, "orders") and not s.authorize(BOB, Op.READ, T, "orders")


def test_authorized_operations_lists_the_type_s_operations_that_are_allowed() -> None:
    s = acls(acl(op=Op.WRITE), acl(op=Op.ALTER_CONFIGS))
    ops = s.authorized_operations(ALICE, T, "orders")
    assert ops == {Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}
    assert operations_bits(ops) == (1 << 4) | (1 << 8) | (1 << 11) | (1 << 10)
    group = acls(acl(G, "g", Op.ALL)).authorized_operations(ALICE, G, "g")
    assert group == {Op.READ, Op.DELETE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
    cluster = acls(acl(C, CLUSTER_NAME, Op.DESCRIBE)).authorized_operations(ALICE, C, CLUSTER_NAME)
    assert cluster == {Op.DESCRIBE}


def test_authorize_any_finds_an_allow_that_no_deny_covers() -> None:
    assert not acls().authorize_any(ALICE, Op.WRITE, T)
    assert acls().authorize_any(ALICE, Op.WRITE, T, allow_if_no_acl=True)
    assert acls(acl(op=Op.WRITE)).authorize_any(ALICE, Op.WRITE, T)
    assert not acls(acl(op=Op.WRITE)).authorize_any(BOB, Op.WRITE, T)
    assert not acls(acl(op=Op.WRITE), acl(op=Op.WRITE, permission=DENY)).authorize_any(ALICE, Op.WRITE, T)
    prefixed_deny = acl(name="ord", pattern=PREFIXED, op=Op.ALL, permission=DENY)
    assert not acls(acl(op=Op.WRITE), prefixed_deny).authorize_any(ALICE, Op.WRITE, T)
    assert acls(acl(op=Op.WRITE), acl(name="pay", op=Op.WRITE), prefixed_deny).authorize_any(
        ALICE, Op.WRITE, T
    )
    assert not acls(acl(op=Op.WRITE), acl(name="*", op=Op.WRITE, permission=DENY)).authorize_any(
        ALICE, Op.WRITE, T
    )
    assert acls(acl(name="*", op=Op.WRITE)).authorize_any(ALICE, Op.WRITE, T)


# -- filters ------------------------------------------------------------------------------------------
BINDINGS = [
    acl(name="orders"),
    acl(name="ord", pattern=PREFIXED, op=Op.WRITE),
    acl(name="*", principal="User:bob", permission=DENY),
    acl(G, "billing", Op.READ, host="10.0.0.1"),
]


def matched(f: AclFilter) -> list[AclBinding]:
    return [b for b in BINDINGS if f.matches(b)]


def test_the_any_filter_matches_everything() -> None:
    assert matched(AclFilter()) == BINDINGS


def test_a_named_filter_with_pattern_any_compares_names_exactly() -> None:
    assert matched(AclFilter(name="orders")) == [BINDINGS[0]]
    assert matched(AclFilter(name="ord")) == [BINDINGS[1]]


def test_a_literal_or_prefixed_filter_matches_that_pattern_type_only() -> None:
    assert matched(AclFilter(T, "ord", PatternType.LITERAL)) == []
    assert matched(AclFilter(T, "ord", PREFIXED)) == [BINDINGS[1]]
    assert matched(AclFilter(T, None, PREFIXED)) == [BINDINGS[1]]


def test_a_match_filter_finds_every_binding_that_applies_to_the_name() -> None:
    assert matched(AclFilter(T, "orders", PatternType.MATCH)) == BINDINGS[:3]
    assert matched(AclFilter(T, "payments", PatternType.MATCH)) == [BINDINGS[2]]


def test_filters_on_principal_host_operation_and_permission() -> None:
    assert matched(AclFilter(principal="User:bob")) == [BINDINGS[2]]
    assert matched(AclFilter(host="10.0.0.1")) == [BINDINGS[3]]
    assert matched(AclFilter(operation=Op.WRITE)) == [BINDINGS[1]]
    assert matched(AclFilter(permission=DENY)) == [BINDINGS[2]]
    assert matched(AclFilter(resource_type=G)) == [BINDINGS[3]]


def test_acl_set_matching_sorts_its_answer() -> None:
    s = acls(*BINDINGS)
    assert s.matching(AclFilter(resource_type=T)) == sorted(
        BINDINGS[:3], key=lambda b: (b.name, b.pattern_type)
    )


# -- wire validation ----------------------------------------------------------------------------------
def wire(**changes: object) -> dict[str, object]:
    base: dict[str, object] = dict(resource_type=2, name="orders", pattern_type=3, principal="User:alice",
                                   host="*", operation=3, permission=3)  # fmt: skip
    return {**base, **changes}


def test_a_valid_creation_becomes_a_binding() -> None:
    assert binding_from_wire(**wire()) == acl()  # type: ignore[arg-type]
    cluster = binding_from_wire(**wire(resource_type=4, name=CLUSTER_NAME, operation=7, permission=2))  # type: ignore[arg-type]
    assert cluster == acl(C, CLUSTER_NAME, Op.ALTER, DENY)
    assert binding_from_wire(**wire(principal="Group:ops")).principal == "Group:ops"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            dict(resource_type=4, name="my-cluster"),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (dict(name=""), "Invalid empty resource name"),
        (dict(resource_type=1), "Invalid resourceType ANY"),
        (dict(resource_type=0), "Invalid resourceType UNKNOWN"),
        (dict(resource_type=99), "Invalid resourceType UNKNOWN"),
        (dict(pattern_type=1), "Invalid patternType ANY"),
        (dict(pattern_type=2), "Invalid patternType MATCH"),
        (dict(pattern_type=9), "Invalid patternType UNKNOWN"),
        (dict(operation=1), "Invalid operation ANY"),
        (dict(operation=42), "Invalid operation UNKNOWN"),
        (dict(permission=1), "Invalid permissionType ANY"),
        (dict(permission=5), "Invalid permissionType UNKNOWN"),
        (dict(principal="alice"), "Could not parse principal from `alice`"),
        (dict(principal=":alice"), "Could not parse principal from `:alice`"),
        (dict(host=""), "Host pattern cannot be null or empty"),
    ],
)
def test_invalid_creations_are_refused_with_kafka_s_message(changes: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidAcl) as raised:
        binding_from_wire(**wire(**changes))  # type: ignore[arg-type]
    assert str(raised.value).startswith(message)


def test_filters_from_the_wire() -> None:
    f = filter_from_wire(1, None, 1, None, None, 1, 1)
    assert f == AclFilter()
    assert filter_from_wire(2, "orders", 2, "User:bob", "*", 8, 2) == AclFilter(
        T, "orders", PatternType.MATCH, "User:bob", "*", Op.DESCRIBE, DENY
    )
    for bad in [(0, None, 1, None, None, 1, 1), (1, None, 0, None, None, 1, 1),
                (1, None, 1, None, None, 0, 1), (1, None, 1, None, None, 1, 0),
                (77, None, 1, None, None, 1, 1)]:  # fmt: skip
        with pytest.raises(InvalidAcl, match="UNKNOWN"):
            filter_from_wire(*bad)
    # Kafka compares a principal filter as a string: one without a type is no error, and matches only
    # a binding whose principal is that very string (which CreateAcls never stores).
    bare = filter_from_wire(1, None, 1, "*", None, 1, 1)
    assert bare == AclFilter(principal="*")
    wildcard = AclBinding(T, "orders", PatternType.LITERAL, "User:*", "*", Op.READ, PermissionType.ALLOW)
    assert not bare.matches(wildcard) and filter_from_wire(1, None, 1, "User:*", None, 1, 1).matches(wildcard)

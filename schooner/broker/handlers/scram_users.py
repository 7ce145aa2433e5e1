"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554): SCRAM users, kept in the users
hash of the deployment's base keyspace (storage/security/users.py).

Kafka's rules and codes: a user named twice in one request gets DUPLICATE_RESOURCE (and none of its
changes is made); a user with no credential is RESOURCE_NOT_FOUND (describing it, or deleting a
credential it lacks); a mechanism other than SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2) is
UNSUPPORTED_SASL_MECHANISM; an empty name, iterations outside 4096..16384, or a salted password of the
wrong length is UNACCEPTABLE_CREDENTIAL. An upsertion carries the salt and the salted password, never
the password: what is stored is derived from them (scram.credential_from_salted). A user whose last
credential goes is deleted unless it keeps a tenant.

Authorization: Kafka asks for DESCRIBE (describe) and ALTER (alter) on the CLUSTER resource, checked
before anything is read or written; a tenant's principal is refused whatever its ACLs say (users are the
deployment's).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32

from ...protocol.messages import make, sibling
from ...protocol.request_types import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from ...protocol.response_types import (
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsResponse,
    response_for,
)
from ...security.acls import AclOperation
from ...security.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, credential_from_salted
from ...storage.keys import Keyspace
from ...storage.redis.calls import Call, together
from ...storage.security.users import User, delete_user, put_user
from ..context import BrokerContext
from ..net.session import RequestScope
from .common import ADMIN_UNAVAILABLE, NO_THROTTLE, STORAGE_ERRORS, may_administer_deployment

# Kafka's ScramMechanism type numbers.
MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
TYPE_OF = {name: number for number, name in MECHANISM_TYPES.items()}
_Error = tuple[ErrorCode, str]


def _users_keyspace(ctx: BrokerContext) -> Keyspace:
    return Keyspace(ctx.settings.keyspace)  # users are the deployment's, never a tenant's


async def handle_describe_user_scram_credentials(
    ctx: BrokerContext, body: DescribeUserScramCredentialsRequest, scope: RequestScope
) -> DescribeUserScramCredentialsResponse:
    resp = response_for(body)
    if not await may_administer_deployment(ctx, scope, AclOperation.DESCRIBE):
        return make(
            resp,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message="Cluster authorization failed.",
            results=(),
        )
    ks = _users_keyspace(ctx)
    asked = [u.name for u in body.users or ()]
    try:
        if asked:
            names = list(dict.fromkeys(asked))
            loaded = await ctx.store.users(ks, names)
            found: dict[str, User | None] = dict(zip(names, loaded, strict=True))
        else:
            found = {u.name: u for u in await ctx.store.all_users(ks) if u.credentials}
    except STORAGE_ERRORS as exc:
        return make(
            resp,
            throttle_time=NO_THROTTLE,
            error_code=ADMIN_UNAVAILABLE,
            error_message=f"Redis is unavailable: {exc}",
            results=(),
        )
    twice = {name for name, n in Counter(asked).items() if n > 1}
    results = []
    for name, user in found.items():
        error: _Error | None = None
        if name in twice:
            error = (ErrorCode.duplicate_resource, f"User {name!r} is named more than once")
        elif user is None or not user.credentials:
            error = (ErrorCode.resource_not_found, f"User {name!r} has no SCRAM credential")
        infos = () if error or user is None else _infos(resp, user)
        results.append(
            make(
                sibling(resp, "DescribeUserScramCredentialsResult"),
                user=name,
                error_code=error[0] if error else ErrorCode.none,
                error_message=error[1] if error else None,
                credential_infos=infos,
            )
        )
    return make(
        resp,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        results=tuple(results),
    )


def _infos(resp: type[DescribeUserScramCredentialsResponse], user: User) -> tuple[Any, ...]:
    return tuple(
        make(sibling(resp, "CredentialInfo"), mechanism=i8(TYPE_OF[m]), iterations=i32(c.iterations))
        for m, c in sorted(user.credentials.items())
        if m in TYPE_OF
    )


async def handle_alter_user_scram_credentials(
    ctx: BrokerContext, body: AlterUserScramCredentialsRequest, scope: RequestScope
) -> AlterUserScramCredentialsResponse:
    resp = response_for(body)
    ks = _users_keyspace(ctx)
    order = list(dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions]))
    errors: dict[str, _Error] = {}
    if not await may_administer_deployment(ctx, scope, AclOperation.ALTER):
        errors = {
            name: (ErrorCode.cluster_authorization_failed, "Cluster authorization failed.") for name in order
        }
    counts = Counter([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    for name in order:
        if counts[name] > 1:
            errors[name] = (ErrorCode.duplicate_resource, f"User {name!r} is altered more than once")
    changes: list[Any] = [*body.deletions, *body.upsertions]
    for change in changes:
        if change.name not in errors:
            problem = _invalid(change)
            if problem is not None:
                errors[change.name] = problem
    valid = [n for n in order if n not in errors]
    try:
        loaded = await ctx.store.users(ks, valid) if valid else []
        users = dict(zip(valid, loaded, strict=True))
        writes = _apply(ks, body, users, errors)
        if writes:
            await ctx.store.drive(together(writes))
    except STORAGE_ERRORS as exc:
        for name in valid:
            errors.setdefault(name, (ADMIN_UNAVAILABLE, f"Redis is unavailable: {exc}"))
    results = tuple(
        make(
            sibling(resp, "AlterUserScramCredentialsResult"),
            user=name,
            error_code=errors[name][0] if name in errors else ErrorCode.none,
            error_message=errors[name][1] if name in errors else None,
        )
        for name in order
    )
    return make(resp, throttle_time=NO_THROTTLE, results=results)


def _invalid(change: Any) -> _Error | None:
    if not change.name:
        return ErrorCode.unacceptable_credential, "The user name must not be empty"
    mechanism = MECHANISM_TYPES.get(change.mechanism)
    if mechanism is None:
        return ErrorCode.unsupported_sasl_mechanism, f"Unknown SCRAM mechanism type {change.mechanism}"
    iterations = getattr(change, "iterations", None)
    if iterations is None:
        return None  # a deletion
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        return (
            ErrorCode.unacceptable_credential,
            f"Iterations must be within {MIN_ITERATIONS}..{MAX_ITERATIONS}, not {iterations}",
        )
    size = hashlib.new(MECHANISMS[mechanism]).digest_size
    if not change.salt or len(change.salted_password) != size:
        return (
            ErrorCode.unacceptable_credential,
            f"A {mechanism} credential needs a salt and {size} salted bytes",
        )
    return None


def _apply(
    ks: Keyspace,
    body: AlterUserScramCredentialsRequest,
    users: dict[str, User | None],
    errors: dict[str, _Error],
) -> Sequence[Call[Any]]:
    """The writes of the valid changes; a deletion of a missing credential goes to errors instead."""
    changed: dict[str, User] = {}
    for d in body.deletions:
        if d.name not in users:
            continue
        user = users[d.name]
        mechanism = MECHANISM_TYPES[d.mechanism]
        if user is None or mechanism not in user.credentials:
            errors[d.name] = (ErrorCode.resource_not_found, f"User {d.name!r} has no {mechanism} credential")
            continue
        left = {m: c for m, c in user.credentials.items() if m != mechanism}
        changed[d.name] = replace(user, credentials=left)
    for u in body.upsertions:
        if u.name not in users:
            continue
        mechanism = MECHANISM_TYPES[u.mechanism]
        user = users[u.name] or User(u.name)
        credential = credential_from_salted(mechanism, u.salted_password, u.salt, u.iterations)
        changed[u.name] = replace(user, credentials={**user.credentials, mechanism: credential})
    return [
        put_user(ks, user) if user.credentials or user.tenant else delete_user(ks, user.name)
        for user in changed.values()
    ]

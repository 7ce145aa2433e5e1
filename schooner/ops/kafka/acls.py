"""SCRAM users and ACLs as a Kafka client sees them (DescribeUserScramCredentials, DescribeAcls,
CreateAcls, DeleteAcls), for the console. Each call takes the caller's AdminClient, so that it runs as
that user; failures are KafkaFailure with Kafka's error name as the code."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from confluent_kafka.admin import AclBindingFilter as _AclBindingFilter

from ..client_options import ClientSettings
from . import KafkaFailure, result

AclBindingFilter: Any = _AclBindingFilter  # its stubs want str where Kafka's filters take None (any)


@dataclass(frozen=True)
class AclRow:
    resource_type: str
    name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


def _name(value: Any) -> str:
    return str(getattr(value, "name", value))


def users(admin: AdminClient, settings: ClientSettings) -> dict[str, list[tuple[str, int]]]:
    """SCRAM users: name -> [(mechanism, iterations)]."""
    future: Any = admin.describe_user_scram_credentials(request_timeout=settings.timeout_s)
    described = result(future, settings)
    return {
        user: [(_name(c.mechanism).replace("_", "-"), c.iterations) for c in d.scram_credential_infos]
        for user, d in sorted(described.items())
    }


def security_enabled(admin: AdminClient, settings: ClientSettings) -> bool:
    """Whether the broker has an authorizer. librdkafka drops DescribeAcls' top-level error, so this
    asks DeleteAcls with a filter that can match no binding: SECURITY_DISABLED means none."""
    probe = AclBindingFilter(
        ResourceType.TOPIC, f"schooner-console-probe-{uuid.uuid4().hex}", ResourcePatternType.LITERAL,
        f"User:{uuid.uuid4().hex}", None, AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    (future,) = admin.delete_acls([probe], request_timeout=settings.timeout_s).values()
    try:
        result(future, settings)
    except KafkaFailure as exc:
        return exc.code != "SECURITY_DISABLED"
    return True


def acls(admin: AdminClient, settings: ClientSettings) -> list[AclRow]:
    everything = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    found = result(admin.describe_acls(everything, request_timeout=settings.timeout_s), settings)
    rows = [
        AclRow(_name(b.restype), b.name, _name(b.resource_pattern_type), b.principal, b.host,
               _name(b.operation), _name(b.permission_type))
        for b in found
    ]  # fmt: skip
    return sorted(rows, key=lambda r: (r.resource_type, r.name, r.principal, r.operation))


def create_acl(admin: AdminClient, settings: ClientSettings, row: AclRow) -> None:
    (future,) = admin.create_acls([_binding(row)], request_timeout=settings.timeout_s).values()
    result(future, settings)


def delete_acl(admin: AdminClient, settings: ClientSettings, row: AclRow) -> int:
    """Deletes the binding that matches the row exactly; how many were deleted."""
    exact = AclBindingFilter(*_parts(row))
    (future,) = admin.delete_acls([exact], request_timeout=settings.timeout_s).values()
    return len(result(future, settings))


def _parts(row: AclRow) -> tuple[Any, ...]:
    try:
        return (
            ResourceType[row.resource_type], row.name, ResourcePatternType[row.pattern_type], row.principal,
            row.host, AclOperation[row.operation], AclPermissionType[row.permission],
        )  # fmt: skip
    except KeyError as exc:
        raise KafkaFailure(f"not a valid ACL: {exc}") from None


def _binding(row: AclRow) -> AclBinding:
    try:
        return AclBinding(*_parts(row))
    except (ValueError, TypeError) as exc:
        raise KafkaFailure(f"not a valid ACL: {exc}") from None

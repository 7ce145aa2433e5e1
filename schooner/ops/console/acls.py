"""Users and ACLs: SCRAM users (DescribeUserScramCredentials) and ACL bindings (describe, create,
delete), as the logged-in user, so the broker's own ACLs decide what each user sees and may change."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .context import kafka
from .kafka_data import AclRow, KafkaFailure, KafkaSide
from .render import done, page, shown

RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID")
PATTERN_TYPES = ("LITERAL", "PREFIXED")
OPERATIONS = ("ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION",
              "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE")  # fmt: skip
PERMISSIONS = ("ALLOW", "DENY")


def _view(side: KafkaSide) -> dict[str, Any]:
    if not side.security_enabled():
        return {"enabled": False, "users": {}, "acls": []}
    users: dict[str, list[tuple[str, int]]] | None
    error = None
    try:
        users = side.users()
    except KafkaFailure as exc:
        users, error = None, shown(exc)
    try:
        acls = side.acls()
    except KafkaFailure as exc:
        acls, error = [], shown(exc)
    return {"enabled": True, "users": users, "acls": acls, "error": error}


async def security(request: Request) -> Response:
    view = await run_in_threadpool(_view, kafka(request))
    return page(
        request, "acls.html", title="Users and ACLs", resource_types=RESOURCE_TYPES,
        pattern_types=PATTERN_TYPES, operations=OPERATIONS, permissions=PERMISSIONS, **view,
    )  # fmt: skip


async def _row(request: Request) -> AclRow:
    form = await request.form()

    def field(name: str, default: str = "") -> str:
        return str(form.get(name, default)).strip()

    row = AclRow(field("resource_type"), field("name"), field("pattern_type", "LITERAL"), field("principal"),
                 field("host", "*") or "*", field("operation"), field("permission", "ALLOW"))  # fmt: skip
    if not row.name or not row.principal.startswith("User:"):
        raise KafkaFailure("an ACL needs a resource name and a principal such as User:alice")
    return row


async def create_acl(request: Request) -> Response:
    row = await _row(request)
    await run_in_threadpool(kafka(request).create_acl, row)
    return done(
        "/security",
        f"allowed {row.principal} {row.operation} on {row.resource_type} {row.name}"
        if row.permission == "ALLOW"
        else f"denied {row.principal} {row.operation} on {row.name}",
    )


async def delete_acl(request: Request) -> Response:
    row = await _row(request)
    deleted = await run_in_threadpool(kafka(request).delete_acl, row)
    return done("/security", f"deleted {deleted} ACL binding(s)")


routes = [
    Route("/security", security, methods=["GET"]),
    Route("/security/acls", create_acl, methods=["POST"]),
    Route("/security/acls/delete", delete_acl, methods=["POST"]),
]

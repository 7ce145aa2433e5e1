"""Users: SCRAM credentials (never passwords) and the tenant each user belongs to.

One hash, `<prefix>:users`, maps a user name to a JSON document:
    {"tenant": "acme" | null,
     "scram": {"SCRAM-SHA-256": {"salt": b64, "iterations": 8192, "stored_key": b64, "server_key": b64}}}
It lives under the deployment's base keyspace (never a tenant's), is read once per authentication, and is
written by AlterUserScramCredentials and `schooner users`. docs/key-layout.md documents it.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from ...security.scram import ScramCredential
from ..keys import Keyspace, check_tenant_name
from ..redis.calls import Call, Steps, command


@dataclass(frozen=True, slots=True)
class User:
    name: str
    tenant: str | None = None
    credentials: dict[str, ScramCredential] = field(default_factory=dict)  # mechanism -> credential


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def encode_user(user: User) -> str:
    return json.dumps(
        {
            "tenant": user.tenant,
            "scram": {
                c.mechanism: {
                    "salt": _b64(c.salt),
                    "iterations": c.iterations,
                    "stored_key": _b64(c.stored_key),
                    "server_key": _b64(c.server_key),
                }
                for c in user.credentials.values()
            },
        },
        sort_keys=True,
    )


def decode_user(name: str, raw: bytes | str) -> User:
    doc: dict[str, Any] = json.loads(raw)
    credentials = {
        mechanism: ScramCredential(
            mechanism,
            base64.b64decode(c["salt"]),
            int(c["iterations"]),
            base64.b64decode(c["stored_key"]),
            base64.b64decode(c["server_key"]),
        )
        for mechanism, c in (doc.get("scram") or {}).items()
    }
    return User(name, doc.get("tenant"), credentials)


def _parse_user(name: str) -> Any:
    return lambda raw: None if raw is None else decode_user(name, raw)


def get_user(ks: Keyspace, name: str) -> Call[User | None]:
    return command("HGET", ks.users, name, parse=_parse_user(name))


def put_user(ks: Keyspace, user: User) -> Call[int]:
    """Creates or replaces the user's record (credentials and tenant together). ValueError for a tenant
    name that no tenant may have (keys.check_tenant_name): it would name no keyspace."""
    if user.tenant is not None:
        check_tenant_name(user.tenant)
    return command("HSET", ks.users, user.name, encode_user(user), parse=int)


def delete_user(ks: Keyspace, name: str) -> Call[bool]:
    return command("HDEL", ks.users, name, parse=bool)


def _parse_all(reply: Any) -> list[User]:
    found = [decode_user(k.decode() if isinstance(k, bytes) else k, v) for k, v in (reply or {}).items()]
    return sorted(found, key=lambda u: u.name)


def all_users(ks: Keyspace) -> Call[list[User]]:
    return command("HGETALL", ks.users, parse=_parse_all)


def tenants(ks: Keyspace) -> Steps[list[str]]:
    """Every tenant some user belongs to."""
    (users,) = yield [all_users(ks)]
    return sorted({u.tenant for u in users if u.tenant})

"""A tenant's keyspace: under the deployment's prefix, apart from every key of the deployment and of every
other tenant, and as docs/key-layout.md shows it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from schooner.storage.keys import Keyspace
from schooner.storage.security.users import User, put_user

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _every_key(ks: Keyspace) -> list[str]:
    """Every key and channel the keyspace builds, with sample arguments."""
    samples = {"topic": "orders", "partition": 0, "name": "orders", "group_id": "g", "group": "g",
               "transactional_id": "tx", "broker_id": 7, "entity_id": "user=alice", "subject": "orders-value",
               "key": f"{ks.prefix}:offsets:{{g}}"}  # fmt: skip
    keys: list[str] = []
    for name, member in inspect.getmembers(Keyspace):
        if name.startswith("_") or name in ("prefix", "tenant"):
            continue
        if isinstance(member, property):
            keys.append(getattr(ks, name))
        elif inspect.isfunction(member):
            params = list(inspect.signature(member).parameters)[1:]
            built = getattr(ks, name)(*(samples[p] for p in params))
            keys.extend(built if isinstance(built, list) else [built])
    return keys


def test_a_tenants_keys_are_under_its_prefix_and_apart_from_the_deployments() -> None:
    base = Keyspace("schooner")
    acme, other = base.tenant("acme"), base.tenant("acme.eu")
    deployment_keys = _every_key(base)
    assert len(deployment_keys) > 40
    assert not any(k.startswith("schooner:tenant:") for k in deployment_keys)
    for key in _every_key(acme):
        assert key.startswith("schooner:tenant:acme:") and not key.startswith("schooner:tenant:acme.eu:")
    assert not set(_every_key(acme)) & set(_every_key(other))
    assert acme.stream("orders", 0) == "schooner:tenant:acme:stream:{orders:0}"


@pytest.mark.parametrize("name", ["", "a:b", "a{b}", "a b", "x" * 65, "ä"])
def test_names_that_no_tenant_may_have(name: str) -> None:
    with pytest.raises(ValueError, match="tenant name"):
        Keyspace("schooner").tenant(name)


def test_a_user_is_not_stored_with_a_tenant_that_names_no_keyspace() -> None:
    with pytest.raises(ValueError, match="tenant name"):
        put_user(Keyspace("schooner"), User("eve", tenant="acme:eu"))
    assert put_user(Keyspace("schooner"), User("ann", tenant="acme.eu")).args[2] == "ann"


def test_key_layout_shows_the_tenant_keys_the_code_builds() -> None:
    text = (DOCS / "key-layout.md").read_text()
    base, acme = Keyspace("schooner"), Keyspace("schooner").tenant("acme")
    for key in ("stream", "topic_names", "group_offsets", "transaction", "appended_channel"):
        args = {"stream": ("orders", 0), "group_offsets": ("payments",), "transaction": ("orders-writer",)}
        built = [getattr(ks, key) for ks in (base, acme)]
        pair = [b(*args[key]) if callable(b) else b for b in built]
        assert f"| `{pair[0]}` | `{pair[1]}` |" in text, key
    assert f"`{base.users}`" in text

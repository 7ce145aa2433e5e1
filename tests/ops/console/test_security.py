"""Logins and read-only: against a SASL broker with the authorizer on, the console asks for a login,
checks it with the broker (SCRAM), and runs every call as that user, so the broker's ACLs apply; a
read-only console hides its forms and refuses every POST with 403."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from schooner.ops.client_options import ClientSettings
from tests.broker.sasl_rig import SASL_LISTENER, add_user, confluent_conf, sasl_bootstrap

from .rig import ORDERS, browser_page, open_page, seed_records, shot

SCRAM = "SCRAM-SHA-256"


@pytest.fixture
def sasl_broker(broker_factory: Any, redis_server: Any, keyspace: str) -> Any:
    add_user(redis_server.url, keyspace, "admin", "admin-secret")
    add_user(redis_server.url, keyspace, "alice", "alice-secret")
    return broker_factory(listeners=[SASL_LISTENER], authorizer=True, super_users=["User:admin"])


def _admin(running: Any) -> AdminClient:
    conf = confluent_conf(SCRAM, "admin", "admin-secret")
    return AdminClient({"bootstrap.servers": sasl_bootstrap(running), **conf})


def _login(page: Any, url: str, user: str, password: str) -> None:
    page.goto(f"{url}/")
    page.wait_for_url("**/login")
    assert page.locator("h1").inner_text() == "Log in"
    page.locator("input[name=username]").fill(user)
    page.locator("input[name=password]").fill(password)
    page.locator("button[type=submit]").click()


def test_scram_login_then_acls_as_that_user(
    sasl_broker: Any, console_factory: Any, page: Any, browser: Any, shots: Path
) -> None:
    admin = _admin(sasl_broker)
    client = ClientSettings(sasl_bootstrap(sasl_broker), "SASL_PLAINTEXT", SCRAM)
    console = console_factory(client, sasl_broker.redis_url)
    seed_records_as_admin(sasl_broker)

    assert page.goto(f"{console.url}/topics").url.endswith("/login")  # nothing without a login
    shot(page, shots, "login")
    _login(page, console.url, "admin", "wrong")
    assert "Login refused" in page.locator(".error").inner_text()
    _login(page, console.url, "admin", "admin-secret")
    page.wait_for_url(f"{console.url}/")
    assert page.locator("h1").inner_text() == "Overview"
    assert "admin" in page.locator("header .who").inner_text()

    open_page(page, f"{console.url}/security", "Users and ACLs")
    assert {"admin", "alice"} <= set(
        page.locator("table").first.locator("tbody td:first-child").all_inner_texts()
    )
    form = page.locator("#create-acl")
    form.locator("select[name=resource_type]").select_option("TOPIC")
    form.locator("input[name=name]").fill(ORDERS)
    form.locator("input[name=principal]").fill("User:alice")
    form.locator("select[name=operation]").select_option("DESCRIBE")
    form.locator("button[type=submit]").click()
    page.wait_for_selector(".notice")
    assert page.locator("tr.acl").count() == 1
    shot(page, shots, "acls")
    everything = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    (binding,) = admin.describe_acls(everything).result(10)
    assert (binding.name, binding.principal, binding.operation) == (
        ORDERS,
        "User:alice",
        AclOperation.DESCRIBE,
    )

    # alice, in a browser of her own, sees orders (DESCRIBE) but may not read its records.
    for other in browser_page(browser):
        _login(other, console.url, "alice", "alice-secret")
        other.wait_for_url(f"{console.url}/")
        open_page(other, f"{console.url}/topics", "Topics")
        assert [r.get_attribute("data-topic") for r in other.locator("tr[data-topic]").all()] == [ORDERS]
        other.goto(f"{console.url}/messages?topic={ORDERS}&partition=0&start=offset&value=0")
        assert "TOPIC_AUTHORIZATION_FAILED" in other.locator(".error").inner_text()
        assert "Traceback" not in other.content()
        other.locator("header button", has_text="Log out").click()
        other.wait_for_url("**/login")
        assert other.goto(f"{console.url}/topics").url.endswith("/login")

    page.locator("tr.acl button", has_text="Delete").click()
    page.wait_for_selector(".notice")
    assert page.locator(".notice").inner_text() == "deleted 1 ACL binding(s)"
    assert admin.describe_acls(everything).result(10) == []


def seed_records_as_admin(running: Any) -> None:
    from confluent_kafka.admin import NewTopic

    from tests.clients import Rec, confluent_produce

    conf = confluent_conf(SCRAM, "admin", "admin-secret")
    admin = AdminClient({"bootstrap.servers": sasl_bootstrap(running), **conf})
    admin.create_topics([NewTopic(ORDERS, 1)])[ORDERS].result(30)
    confluent_produce(sasl_bootstrap(running), ORDERS, [Rec(b"k", b"v")], **conf)


def test_read_only_hides_forms_and_refuses_posts(broker: Any, console_factory: Any, page: Any) -> None:
    seed_records(broker.bootstrap)
    console = console_factory(ClientSettings(broker.bootstrap), broker.redis_url, read_only=True)
    open_page(page, f"{console.url}/topics", "Topics")
    assert page.locator("#read-only").inner_text() == "read-only"
    assert page.locator("form#create-topic").count() == 0
    open_page(page, f"{console.url}/topics/{ORDERS}", f"Topic {ORDERS}")
    assert page.locator("form").count() == 0
    open_page(page, f"{console.url}/messages", "Messages")
    assert page.locator("form#produce").count() == 0
    refused = page.request.post(f"{console.url}/topics", form={"name": "sneaky", "partitions": "1"})
    assert refused.status == 403 and "read-only" in refused.text()
    refused = page.request.post(f"{console.url}/topics/{ORDERS}/delete")
    assert refused.status == 403
    topics = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics
    assert "sneaky" not in topics and ORDERS in topics


def test_a_post_from_another_site_is_refused(broker: Any, console: Any, page: Any) -> None:
    refused = page.request.post(
        f"{console.url}/topics",
        form={"name": "csrf", "partitions": "1"},
        headers={"Origin": "http://evil.test"},
    )
    assert refused.status == 403
    assert "csrf" not in AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics

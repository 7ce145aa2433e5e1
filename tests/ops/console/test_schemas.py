"""The Schemas pages and decoded messages, in headless chromium against a broker that serves its schema
registry: subjects with their versions, schemas, compatibility and mode; records encoded by confluent-kafka's
AvroSerializer (and JSON Schema and Protobuf ones in the wire format) shown decoded with their schema id; a
registry that cannot be reached leaves the topic's pages raw and says so on the Schemas page; behind SASL, the
registry is asked as the console's user, so its ACLs decide which subjects show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from click.testing import CliRunner
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from schooner.ops.cli import main
from schooner.ops.client_options import ClientSettings
from schooner.ops.console.registry_data import default_url
from schooner.storage.redis.embedded import free_port
from tests.broker.sasl_rig import SASL_LISTENER, add_user, confluent_conf, sasl_bootstrap
from tests.clients import Rec, confluent_produce

from .rig import ERROR_SELECTOR, browser_page, open_page, shot

PEOPLE = "people"
USER = json.dumps({"type": "record", "name": "User", "namespace": "acme", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})  # fmt: skip
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "acme", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
    {"name": "email", "type": ["null", "string"], "default": None}]})  # fmt: skip
ORDER = json.dumps({"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                    "required": ["sku"]})  # fmt: skip
PING = 'syntax = "proto3";\npackage acme;\n\nmessage Ping {\n  string id = 1;\n}\n'
UNKNOWN_ID = 9999


def _framed(schema_id: int, payload: bytes) -> bytes:
    """Confluent's wire format: the magic byte 0, the schema id (4 bytes, big-endian), the payload."""
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def _register(http: httpx.Client, subject: str, schema: str, schema_type: str = "AVRO") -> int:
    answer = http.post(f"/subjects/{subject}/versions", json={"schema": schema, "schemaType": schema_type})
    assert answer.status_code == 200, answer.text
    return int(answer.json()["id"])


def _seed(url: str, bootstrap: str) -> dict[str, int]:
    """people-key (Avro string), people-value (Avro User, two versions, FULL), orders-value (JSON Schema),
    pings-value (Protobuf); topic people with records of each, one with an id the registry does not know,
    and one plain."""
    with httpx.Client(base_url=url, timeout=30) as http:
        ids = {
            "key": _register(http, f"{PEOPLE}-key", json.dumps({"type": "string"})),
            "user": _register(http, f"{PEOPLE}-value", USER),
            "user2": _register(http, f"{PEOPLE}-value", USER_V2),
            "order": _register(http, "orders-value", ORDER, "JSON"),
            "ping": _register(http, "pings-value", PING, "PROTOBUF"),
        }
        assert http.put(f"/config/{PEOPLE}-value", json={"compatibility": "FULL"}).status_code == 200
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a collected client drops its calls
    admin.create_topics([NewTopic(PEOPLE, 1)])[PEOPLE].result(30)
    sr = SchemaRegistryClient({"url": url})
    values = AvroSerializer(sr, USER)
    keys = AvroSerializer(sr, json.dumps({"type": "string"}))
    vctx = SerializationContext(PEOPLE, MessageField.VALUE)
    kctx = SerializationContext(PEOPLE, MessageField.KEY)
    records = [
        Rec(keys(name, kctx), values({"name": name, "age": age}, vctx))
        for name, age in (("ann", 31), ("bob", 42))
    ]
    records += [
        Rec(b"order-1", _framed(ids["order"], json.dumps({"sku": "A-1", "qty": 2}).encode())),
        # Protobuf: the message indexes ([0], written as the single byte 0), then Ping{id: "p1"}
        Rec(b"ping-1", _framed(ids["ping"], b"\x00" + b"\x0a\x02p1")),
        Rec(b"stranger", _framed(UNKNOWN_ID, b"\x02\x04")),
        Rec(b"plain", b"just text"),
    ]
    confluent_produce(bootstrap, PEOPLE, records)
    return ids


def test_schemas_pages_and_decoded_messages(
    broker_factory: Any, console_factory: Any, page: Any, shots: Path
) -> None:
    port = free_port()
    broker = broker_factory(schema_registry_port=port)
    url = f"http://127.0.0.1:{port}"
    ids = _seed(url, broker.bootstrap)
    console = console_factory(ClientSettings(broker.bootstrap), broker.redis_url, schema_registry_url=url)
    base = console.url

    open_page(page, f"{base}/schemas", "Schemas")
    assert page.locator("header nav a", has_text="Schemas").count() == 1
    assert page.locator("#global-compatibility").inner_text() == "BACKWARD"
    assert page.locator("#global-mode").inner_text() == "READWRITE"
    rows = page.locator("tr.subject")
    assert [r.get_attribute("data-subject") for r in rows.all()] == [
        "orders-value", f"{PEOPLE}-key", f"{PEOPLE}-value", "pings-value"
    ]  # fmt: skip
    people = page.locator(f"tr.subject[data-subject='{PEOPLE}-value'] td").all_inner_texts()
    assert people == [f"{PEOPLE}-value", "2", str(ids["user2"]), "AVRO"]
    orders = page.locator("tr.subject[data-subject='orders-value'] td").all_inner_texts()
    assert orders == ["orders-value", "1", str(ids["order"]), "JSON"]
    assert page.locator("tr.subject[data-subject='pings-value'] td").nth(3).inner_text() == "PROTOBUF"
    shot(page, shots, "schemas")

    page.locator(f"tr.subject[data-subject='{PEOPLE}-value'] a").first.click()
    page.wait_for_url(f"**/schemas/subjects/{PEOPLE}-value")
    assert page.locator("h1").inner_text() == f"Subject {PEOPLE}-value"
    assert page.locator(ERROR_SELECTOR).count() == 0
    assert "FULL" in page.locator("#compatibility").inner_text()
    assert "subject's own" in page.locator("#compatibility").inner_text()
    assert "READWRITE" in page.locator("#mode").inner_text()
    assert "registry's" in page.locator("#mode").inner_text()
    assert [r.get_attribute("data-version") for r in page.locator("tr.version").all()] == ["2", "1"]
    first = page.locator("section.schema-version[data-version='1'] pre.schema").inner_text()
    assert json.loads(first) == json.loads(USER)
    assert '\n  "name": "User",' in first  # pretty-printed
    assert '"email"' in page.locator("section.schema-version[data-version='2'] pre.schema").inner_text()
    shot(page, shots, "schema-subject")

    open_page(page, f"{base}/schemas/subjects/pings-value", "Subject pings-value")
    proto = page.locator("pre.schema").inner_text()
    assert "message Ping" in proto and "string id = 1;" in proto  # the .proto text, not JSON
    assert "(the registry's)" in page.locator("#compatibility").inner_text()

    open_page(page, f"{base}/schemas/ids/{ids['order']}", f"Schema {ids['order']}")
    assert page.locator("#schema-type").inner_text().startswith("JSON, registered as orders-value version 1")
    assert json.loads(page.locator("pre.schema").inner_text()) == json.loads(ORDER)

    unknown = page.goto(f"{base}/schemas/subjects/nobody-value")
    assert unknown is not None and unknown.status == 404
    assert "Subject 'nobody-value' not found" in page.locator(".error").inner_text()

    open_page(page, f"{base}/topics/{PEOPLE}", f"Topic {PEOPLE}")
    assert page.locator("#topic-schemas a").all_inner_texts() == [f"{PEOPLE}-key", f"{PEOPLE}-value"]

    open_page(page, f"{base}/messages?topic={PEOPLE}&partition=0&start=offset&value=0", "Messages")
    ann = page.locator("tr.record[data-offset='0']")
    value = ann.locator("td.value")
    assert '"name": "ann"' in value.locator("pre.json.decoded").inner_text()
    assert '"age": 31' in value.inner_text()
    tag = value.locator(".schema-tag")
    assert tag.inner_text() == f"AVRO · schema id {ids['user']}"
    assert tag.get_attribute("href") == f"/schemas/ids/{ids['user']}"
    assert ann.locator("td.key pre.decoded").inner_text() == '"ann"'
    assert ann.locator("td.key .schema-tag").inner_text() == f"AVRO · schema id {ids['key']}"
    order = page.locator("tr.record[data-offset='2'] td.value")
    assert json.loads(order.locator("pre.decoded").inner_text()) == {"sku": "A-1", "qty": 2}
    assert order.locator(".schema-tag").inner_text() == f"JSON · schema id {ids['order']}"
    ping = page.locator("tr.record[data-offset='3'] td.value")
    assert json.loads(ping.locator("pre.decoded").inner_text()) == {"id": "p1"}
    assert ping.locator(".schema-tag").inner_text() == f"PROTOBUF · schema id {ids['ping']}"
    stranger = page.locator("tr.record[data-offset='4'] td.value")  # an id the registry does not know
    assert stranger.locator(".schema-tag").count() == 0
    assert stranger.locator("pre.hex").inner_text() == "00 00 00 27 0f 02 04"
    assert page.locator("tr.record[data-offset='5'] td.value pre.text").inner_text() == "just text"
    shot(page, shots, "messages-decoded")

    # "Show as hex" shows the bytes themselves; the htmx fragment decodes as the page does.
    open_page(page, f"{base}/messages?topic={PEOPLE}&partition=0&start=offset&value=0&format=hex", "Messages")
    assert page.locator("tr.record[data-offset='0'] td.value .schema-tag").count() == 0
    assert page.locator("tr.record[data-offset='0'] td.value pre.hex").inner_text().startswith("00 00 00 00")
    fragment = page.request.get(f"{base}/messages/records?topic={PEOPLE}&partition=0&start=newest&limit=6")
    assert fragment.status == 200 and "&#34;name&#34;: &#34;bob&#34;" in fragment.text()

    open_page(page, f"{base}/messages?topic={PEOPLE}&partition=0&start=offset&value=0&limit=1", "Messages")
    page.locator("td.value .schema-tag").click()
    page.wait_for_url(f"**/schemas/ids/{ids['user']}")
    assert page.locator("h1").inner_text() == f"Schema {ids['user']}"
    assert f"{PEOPLE}-value version 1" in page.locator("#schema-type").inner_text()


def test_an_unreachable_registry_leaves_pages_raw_and_is_said(
    broker_factory: Any, console_factory: Any, page: Any
) -> None:
    port = free_port()
    broker = broker_factory(schema_registry_port=port)
    url = f"http://127.0.0.1:{port}"
    ids = _seed(url, broker.bootstrap)
    closed = f"http://127.0.0.1:{free_port()}"
    console = console_factory(ClientSettings(broker.bootstrap), broker.redis_url, schema_registry_url=closed)

    open_page(page, f"{console.url}/topics/{PEOPLE}", f"Topic {PEOPLE}")
    assert "cannot be reached" in page.locator("#topic-schemas").inner_text()
    open_page(page, f"{console.url}/messages?topic={PEOPLE}&partition=0&start=offset&value=0", "Messages")
    assert page.locator("tr.record").count() == 6
    assert page.locator(".schema-tag").count() == 0
    raw = page.locator("tr.record[data-offset='0'] td.value pre.hex").inner_text()
    assert raw.startswith("00 " + ids["user"].to_bytes(4, "big").hex(" "))

    response = page.goto(f"{console.url}/schemas")
    assert response is not None and response.status == 502
    assert page.locator("h1").inner_text() == "Schemas"
    failure = page.locator("#registry-failure").inner_text()
    assert failure.startswith(f"The schema registry at {closed} cannot be reached")
    assert "--schema-registry" in page.locator("body").inner_text()
    assert "Traceback" not in page.content()
    response = page.goto(f"{console.url}/schemas/subjects/{PEOPLE}-value")
    assert response is not None and response.status == 502
    assert "cannot be reached" in page.locator(".error").inner_text()


def test_behind_sasl_the_registry_is_asked_as_the_consoles_user(
    broker_factory: Any, redis_server: Any, keyspace: str, console_factory: Any, page: Any, browser: Any
) -> None:
    add_user(redis_server.url, keyspace, "admin", "admin-secret")
    add_user(redis_server.url, keyspace, "alice", "alice-secret")
    port = free_port()
    broker = broker_factory(listeners=[SASL_LISTENER], authorizer=True, super_users=["User:admin"],
                            schema_registry_port=port)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    bootstrap = sasl_bootstrap(broker)
    conf = confluent_conf("SCRAM-SHA-256", "admin", "admin-secret")
    admin = AdminClient({"bootstrap.servers": bootstrap, **conf})
    for topic in ("open", "secret"):
        admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    with httpx.Client(base_url=url, timeout=30, auth=("admin", "admin-secret")) as http:
        open_id = _register(http, "open-value", USER)
        _register(http, "secret-value", ORDER, "JSON")
    grants = [
        AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*", operation,
                   AclPermissionType.ALLOW)
        for topic in ("open",) for operation in (AclOperation.DESCRIBE, AclOperation.READ)
    ]  # fmt: skip
    for future in admin.create_acls(grants).values():
        future.result(30)
    confluent_produce(bootstrap, "open", [Rec(b"k", _framed(open_id, b"\x06ann\x3e"))], **conf)

    # The command line's identity: admin, a super user, sees every subject.
    as_admin = ClientSettings(bootstrap, "SASL_PLAINTEXT", "SCRAM-SHA-256", "admin", "admin-secret")
    console = console_factory(as_admin, broker.redis_url, schema_registry_url=url)
    open_page(page, f"{console.url}/schemas", "Schemas")
    assert [r.get_attribute("data-subject") for r in page.locator("tr.subject").all()] == [
        "open-value", "secret-value"
    ]  # fmt: skip

    # With logins, each user's own: alice sees the subject of her topic only, and its records decoded.
    logins = console_factory(ClientSettings(bootstrap, "SASL_PLAINTEXT", "SCRAM-SHA-256"), broker.redis_url,
                             schema_registry_url=url)  # fmt: skip
    for other in browser_page(browser):
        other.goto(f"{logins.url}/login")
        other.locator("input[name=username]").fill("alice")
        other.locator("input[name=password]").fill("alice-secret")
        other.locator("button[type=submit]").click()
        other.wait_for_url(f"{logins.url}/")
        open_page(other, f"{logins.url}/schemas", "Schemas")
        assert [r.get_attribute("data-subject") for r in other.locator("tr.subject").all()] == ["open-value"]
        assert other.locator("#global-compatibility").inner_text() == "not shown to you"  # DESCRIBE_CONFIGS
        open_page(other, f"{logins.url}/schemas/subjects/open-value", "Subject open-value")
        assert other.locator("tr.version").count() == 1
        assert other.locator("#compatibility").inner_text() == "not shown to you"
        denied = other.goto(f"{logins.url}/schemas/subjects/secret-value")
        assert denied is not None and denied.status == 403
        assert "User:alice is not authorized" in other.locator(".error").inner_text()
        open_page(other, f"{logins.url}/messages?topic=open&partition=0&start=offset&value=0", "Messages")
        value = other.locator("tr.record[data-offset='0'] td.value")
        assert json.loads(value.locator("pre.decoded").inner_text()) == {"name": "ann", "age": 31}


def test_the_default_registry_is_on_the_bootstrap_host() -> None:
    assert default_url("broker-1.example:9092,broker-2.example:9092") == "http://broker-1.example:8081"
    assert default_url("127.0.0.1:19092") == "http://127.0.0.1:8081"
    assert default_url("[::1]:9092") == "http://[::1]:8081"
    assert default_url("kafka") == "http://kafka:8081"


def test_a_registry_url_that_is_not_http_is_one_line() -> None:
    done = CliRunner().invoke(main, ["console", "--schema-registry", "registry:8081"])
    assert done.exit_code == 2 and "--schema-registry: must be an http:// or https:// URL" in done.output

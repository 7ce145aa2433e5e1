"""The registry of a SASL broker: every request authenticates with HTTP Basic as one of the broker's SCRAM
users; with the authorizer on, the broker's ACLs (made with a real Kafka client) decide what each user may do
to a subject, a subject standing for the topic it is named after; a tenant's users have a registry of their
own. confluent-kafka's SchemaRegistryClient logs in with basic.auth.user.info."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from tests.broker.sasl_rig import SASL_LISTENER, add_user, confluent_conf, sasl_bootstrap
from tests.registry.conftest import Registry

SCRAM = "SCRAM-SHA-256"
PASSWORDS = {
    "admin": "admin-secret",
    "alice": "alice-secret",
    "bob": "bob-secret",
    "carol": "carol-secret",
    "dave": "dave-secret",
}
# confluent-kafka names Kafka's CLUSTER resource type BROKER (both are 4 on the wire).
CLUSTER = ResourceType.BROKER


def record(name: str, *fields: str) -> str:
    """An Avro record schema's text with string fields; fields after the first have a default."""
    docs: list[dict[str, Any]] = [{"name": fields[0], "type": "string"}]
    docs += [{"name": f, "type": "string", "default": ""} for f in fields[1:]]
    return json.dumps({"type": "record", "name": name, "namespace": "acme", "fields": docs})


ORDER = record("Order", "id")
ORDER_V2 = record("Order", "id", "item")
PAYMENT = record("Payment", "id")


def error(response: httpx.Response) -> tuple[int, int]:
    """The status and Confluent's error code of an error answer (its body {"error_code", "message"})."""
    body = response.json()
    assert set(body) == {"error_code", "message"}, body
    assert isinstance(body["message"], str) and body["message"]
    return response.status_code, body["error_code"]


def register(http: httpx.Client, subject: str, schema: str) -> httpx.Response:
    return http.post(f"/subjects/{subject}/versions", json={"schema": schema})


@pytest.fixture
def secured(registry_factory: Any, redis_server: Any, keyspace: str) -> Registry:
    """A broker on a SASL listener with the authorizer on (admin its super user) and its registry; dave
    has a SCRAM-SHA-512 credential only."""
    for user, password in PASSWORDS.items():
        mechanisms = ("SCRAM-SHA-512",) if user == "dave" else ("SCRAM-SHA-256", "SCRAM-SHA-512")
        add_user(redis_server.url, keyspace, user, password, mechanisms=mechanisms)
    return registry_factory(listeners=[SASL_LISTENER], authorizer=True, super_users=["User:admin"])


@pytest.fixture
def admin(secured: Registry) -> Iterator[AdminClient]:
    """The super user's AdminClient over SASL: ACLs are made as a real client makes them."""
    conf = confluent_conf(SCRAM, "admin", PASSWORDS["admin"])
    yield AdminClient({"bootstrap.servers": sasl_bootstrap(secured.broker), **conf})


def allow(admin: AdminClient, user: str, rtype: ResourceType, name: str, *operations: AclOperation) -> None:
    bindings = [
        AclBinding(rtype, name, ResourcePatternType.LITERAL, f"User:{user}", "*", op, AclPermissionType.ALLOW)
        for op in operations
    ]
    for future in admin.create_acls(bindings, request_timeout=20).values():
        assert future.result(20) is None


@pytest.fixture
def as_user(secured: Registry) -> Iterator[Any]:
    """as_user(name): an HTTP client logged in (Basic) as that broker user; closed after the test."""
    opened: list[httpx.Client] = []

    def make(user: str) -> httpx.Client:
        opened.append(secured.client(auth=(user, PASSWORDS[user])))
        return opened[-1]

    yield make
    for http in opened:
        http.close()


def test_no_or_bad_credentials_get_401_with_confluents_body(secured: Registry) -> None:
    """Without credentials, with a wrong password, an unknown user or a malformed header: 401, Confluent's
    error body and a Basic challenge; on every endpoint, schemas by id too."""
    with secured.client() as http:
        for path in ("/subjects", "/schemas/ids/1", "/schemas/types", "/config", "/"):
            answer = http.get(path)
            assert error(answer) == (401, 401), path
            assert answer.headers["content-type"].startswith("application/vnd.schemaregistry.v1+json")
            assert answer.headers["www-authenticate"].lower().startswith("basic realm=")
        assert error(register(http, "orders-value", ORDER)) == (401, 401)
        assert error(http.get("/subjects", auth=("alice", "wrong"))) == (401, 401)
        assert error(http.get("/subjects", auth=("nobody", "alice-secret"))) == (401, 401)
        assert error(http.get("/subjects", auth=("alice", ""))) == (401, 401)
        for header in (
            "Bearer abc",
            "Basic",
            "Basic !!!not-base64",
            "Basic " + base64.b64encode(b"alice").decode(),
        ):
            assert error(http.get("/subjects", headers={"Authorization": header})) == (401, 401), header
        # A password that matched once does not let another through.
        assert http.get("/subjects", auth=("alice", "alice-secret")).status_code == 200
        assert error(http.get("/subjects", auth=("alice", "alice-secret!"))) == (401, 401)
        assert error(register(http, "orders-value", ORDER)) == (401, 401)


def test_scram_users_authenticate_with_their_password(secured: Registry, as_user: Any) -> None:
    """Basic credentials of a SCRAM user (either mechanism's credential) answer 200."""
    for user in ("admin", "alice", "dave"):
        http = as_user(user)
        assert http.get("/subjects").status_code == 200, user
        assert http.get("/schemas/types").json() == ["AVRO", "JSON", "PROTOBUF"]
    assert as_user("admin").get("/subjects").json() == []


def test_without_acls_a_user_neither_registers_nor_sees_a_subject(as_user: Any) -> None:
    """alice, with no ACLs, gets 40301 registering under orders-value or reading it, and GET /subjects
    (and /schemas) leave it out; the super user sees it."""
    admin, alice = as_user("admin"), as_user("alice")
    assert register(admin, "orders-value", ORDER).status_code == 200
    refused = register(alice, "orders-value", ORDER_V2)
    assert error(refused) == (403, 40301)
    assert "User:alice" in refused.json()["message"]
    assert alice.get("/subjects").json() == []
    assert alice.get("/schemas").json() == []
    assert error(alice.get("/subjects/orders-value/versions")) == (403, 40301)
    assert error(alice.get("/subjects/orders-value/versions/latest")) == (403, 40301)
    assert error(alice.post("/subjects/orders-value", json={"schema": ORDER})) == (403, 40301)
    compatibility = alice.post("/compatibility/subjects/orders-value/versions/latest", json={"schema": ORDER})
    assert error(compatibility) == (403, 40301)
    assert error(alice.delete("/subjects/orders-value")) == (403, 40301)
    assert error(alice.get("/config/orders-value")) == (403, 40301)
    assert admin.get("/subjects").json() == ["orders-value"]
    assert admin.get("/subjects/orders-value/versions").json() == [1]


def test_topic_acls_grant_register_read_and_delete(admin: AdminClient, as_user: Any) -> None:
    """WRITE on topic orders lets alice register under orders-value and orders-key (not payments-value);
    DESCRIBE lets bob read the versions and find orders-value listed, but not register or delete; DELETE
    lets him delete."""
    root, alice, bob = as_user("admin"), as_user("alice"), as_user("bob")
    assert register(root, "orders-value", ORDER).json()["version"] == 1
    assert register(root, "payments-value", PAYMENT).status_code == 200

    allow(admin, "alice", ResourceType.TOPIC, "orders", AclOperation.WRITE)
    answer = register(alice, "orders-value", ORDER_V2)
    assert answer.status_code == 200, answer.text
    assert answer.json()["version"] == 2
    assert register(alice, "orders-key", ORDER).status_code == 200
    assert error(register(alice, "payments-value", ORDER)) == (403, 40301)
    assert error(alice.delete("/subjects/orders-value/versions/2")) == (403, 40301)  # WRITE is not DELETE

    assert error(bob.get("/subjects/orders-value/versions")) == (403, 40301)
    allow(admin, "bob", ResourceType.TOPIC, "orders", AclOperation.DESCRIBE)
    assert bob.get("/subjects").json() == ["orders-key", "orders-value"]
    assert bob.get("/subjects/orders-value/versions").json() == [1, 2]
    latest = bob.get("/subjects/orders-value/versions/latest").json()
    assert (latest["version"], json.loads(latest["schema"])) == (2, json.loads(ORDER_V2))
    assert bob.post("/subjects/orders-value", json={"schema": ORDER}).json()["version"] == 1
    check = bob.post("/compatibility/subjects/orders-value/versions/latest", json={"schema": ORDER_V2})
    assert check.json() == {"is_compatible": True}
    assert [d["subject"] for d in bob.get("/schemas").json()] == [
        "orders-key",
        "orders-value",
        "orders-value",
    ]
    assert error(register(bob, "orders-value", record("Order", "id", "item", "note"))) == (403, 40301)
    assert error(bob.delete("/subjects/orders-value/versions/2")) == (403, 40301)
    assert error(bob.get("/subjects/payments-value/versions")) == (403, 40301)

    allow(admin, "bob", ResourceType.TOPIC, "orders", AclOperation.DELETE)
    assert bob.delete("/subjects/orders-value/versions/2").json() == 2
    assert bob.delete("/subjects/orders-value").json() == [1]
    assert bob.delete("/subjects/orders-value", params={"permanent": "true"}).json() == [1, 2]
    assert root.get("/subjects").json() == ["orders-key", "payments-value"]


def test_record_name_subjects_stand_for_the_cluster(admin: AdminClient, as_user: Any) -> None:
    """A subject named after no topic (RecordNameStrategy's acme.Order, TopicRecordNameStrategy's
    orders-acme.Order) needs ALTER on the CLUSTER to register, whatever the user may do to topic orders."""
    alice = as_user("alice")
    allow(admin, "alice", ResourceType.TOPIC, "orders", AclOperation.ALL)
    for subject in ("acme.Order", "orders-acme.Order"):
        assert error(register(alice, subject, ORDER)) == (403, 40301), subject
        assert error(alice.get(f"/subjects/{subject}/versions")) == (403, 40301), subject
    assert register(alice, "orders-value", ORDER).status_code == 200

    allow(admin, "alice", CLUSTER, "kafka-cluster", AclOperation.ALTER)
    for subject in ("acme.Order", "orders-acme.Order"):
        answer = register(alice, subject, ORDER)
        assert answer.status_code == 200, (subject, answer.text)
        assert alice.get(f"/subjects/{subject}/versions").json() == [1]  # ALTER implies DESCRIBE
    assert alice.get("/subjects").json() == ["acme.Order", "orders-acme.Order", "orders-value"]
    # The cluster grants nothing on a topic's subjects.
    assert error(register(alice, "payments-value", PAYMENT)) == (403, 40301)


def test_configs_need_alter_configs_where_they_apply(admin: AdminClient, as_user: Any) -> None:
    """The global config and mode need ALTER_CONFIGS on the CLUSTER (DESCRIBE_CONFIGS to read them); a
    subject's need them on its topic. Neither grants the other."""
    alice = as_user("alice")
    assert error(alice.put("/config", json={"compatibility": "FULL"})) == (403, 40301)
    assert error(alice.get("/config")) == (403, 40301)
    assert error(alice.put("/mode", json={"mode": "READONLY"})) == (403, 40301)

    allow(admin, "alice", CLUSTER, "kafka-cluster", AclOperation.DESCRIBE_CONFIGS)
    assert alice.get("/config").json()["compatibilityLevel"] == "BACKWARD"
    assert error(alice.put("/config", json={"compatibility": "FULL"})) == (403, 40301)

    allow(admin, "alice", CLUSTER, "kafka-cluster", AclOperation.ALTER_CONFIGS)
    assert alice.put("/config", json={"compatibility": "FULL"}).json()["compatibility"] == "FULL"
    assert as_user("admin").get("/config").json()["compatibilityLevel"] == "FULL"
    assert alice.put("/mode", json={"mode": "READONLY"}).json() == {"mode": "READONLY"}
    assert alice.delete("/mode").json() == {"mode": "READONLY"}
    assert error(alice.put("/config/orders-value", json={"compatibility": "NONE"})) == (403, 40301)

    allow(admin, "alice", ResourceType.TOPIC, "orders", AclOperation.ALTER_CONFIGS)
    assert alice.put("/config/orders-value", json={"compatibility": "NONE"}).json()["compatibility"] == "NONE"
    assert (
        alice.get("/config/orders-value").json()["compatibilityLevel"] == "NONE"
    )  # implies DESCRIBE_CONFIGS
    assert error(alice.put("/config/payments-value", json={"compatibility": "NONE"})) == (403, 40301)
    assert error(register(alice, "orders-value", ORDER)) == (403, 40301)  # configs are not WRITE


def test_the_super_user_may_do_everything(as_user: Any) -> None:
    """admin, a super user without a single ACL: topic and record-name subjects, configs, modes, deletes."""
    root = as_user("admin")
    for subject in ("orders-value", "acme.Order"):
        assert register(root, subject, ORDER).status_code == 200
        assert register(root, subject, ORDER_V2).json()["version"] == 2
        assert root.get(f"/subjects/{subject}/versions").json() == [1, 2]
        assert root.put(f"/config/{subject}", json={"compatibility": "NONE"}).status_code == 200
        assert root.delete(f"/subjects/{subject}/versions/1").json() == 1
    assert root.put("/config", json={"compatibility": "FULL_TRANSITIVE"}).status_code == 200
    assert root.get("/config").json()["compatibilityLevel"] == "FULL_TRANSITIVE"
    assert root.put("/mode/orders-value", json={"mode": "READONLY"}).json() == {"mode": "READONLY"}
    assert error(register(root, "orders-value", PAYMENT)) == (422, 42205)  # the mode, not the user
    assert root.delete("/mode/orders-value").status_code == 200
    assert root.delete("/subjects/acme.Order").json() == [2]
    assert root.get("/subjects").json() == ["orders-value"]


def test_schemas_by_id_need_only_authentication(as_user: Any, secured: Registry) -> None:
    """carol, with no ACLs, reads a schema by id (a consumer decodes by id) but not the subject; without
    credentials, not even that."""
    schema_id = register(as_user("admin"), "orders-value", ORDER).json()["id"]
    carol = as_user("carol")
    doc = carol.get(f"/schemas/ids/{schema_id}").json()
    assert json.loads(doc["schema"]) == json.loads(ORDER)
    assert json.loads(carol.get(f"/schemas/ids/{schema_id}/schema").text) == json.loads(ORDER)
    assert error(carol.get("/schemas/ids/424242")) == (404, 40403)
    assert error(carol.get("/subjects/orders-value/versions/1")) == (403, 40301)
    # Which subjects hold the id is shown only for the subjects carol may read: none.
    assert carol.get(f"/schemas/ids/{schema_id}/subjects").json() == []
    assert carol.get(f"/schemas/ids/{schema_id}/versions").json() == []
    assert as_user("admin").get(f"/schemas/ids/{schema_id}/subjects").json() == ["orders-value"]
    with secured.client() as anonymous:
        assert error(anonymous.get(f"/schemas/ids/{schema_id}")) == (401, 401)


def test_each_tenant_has_its_own_registry(registry_factory: Any, redis_server: Any, keyspace: str) -> None:
    """alice (tenant a) and bob (tenant b) both register under orders-value: each sees only their own
    subjects, ids count apart, an id names the tenant's own schema; a user with no tenant sees neither."""
    for user, tenant in (("alice", "a"), ("bob", "b"), ("carol", None)):
        add_user(redis_server.url, keyspace, user, PASSWORDS[user], tenant=tenant)
    registry = registry_factory(listeners=[SASL_LISTENER], auto_create_topics=False)
    with (
        registry.client(auth=("alice", PASSWORDS["alice"])) as alice,
        registry.client(auth=("bob", PASSWORDS["bob"])) as bob,
        registry.client(auth=("carol", PASSWORDS["carol"])) as carol,
    ):
        a_order = register(alice, "orders-value", ORDER).json()
        a_payment = register(alice, "payments-value", PAYMENT).json()
        # bob registers alice's second schema first: in one shared registry it would have her id.
        b_payment = register(bob, "orders-value", PAYMENT).json()
        assert b_payment["version"] == 1
        assert b_payment["id"] == a_order["id"] != a_payment["id"]

        assert alice.get("/subjects").json() == ["orders-value", "payments-value"]
        assert bob.get("/subjects").json() == ["orders-value"]
        assert carol.get("/subjects").json() == []
        assert json.loads(alice.get(f"/schemas/ids/{a_order['id']}").json()["schema"]) == json.loads(ORDER)
        assert json.loads(bob.get(f"/schemas/ids/{b_payment['id']}").json()["schema"]) == json.loads(PAYMENT)
        assert error(bob.get(f"/schemas/ids/{a_payment['id']}")) == (404, 40403)
        assert error(carol.get(f"/schemas/ids/{a_order['id']}")) == (404, 40403)
        latest = bob.get("/subjects/orders-value/versions/latest").json()
        assert json.loads(latest["schema"]) == json.loads(PAYMENT)

        # A delete in one tenant leaves the other's subject of the same name.
        assert bob.delete("/subjects/orders-value").json() == [1]
        assert alice.get("/subjects/orders-value/versions").json() == [1]
        assert bob.get("/subjects").json() == []


def test_confluent_schema_registry_client_with_basic_auth(admin: AdminClient, secured: Registry) -> None:
    """confluent-kafka's SchemaRegistryClient with basic.auth.user.info registers and fetches as alice
    (WRITE on topic payments); a subject she has no ACL for and a wrong password are its errors."""
    with secured.client(auth=("admin", PASSWORDS["admin"])) as root:
        register(root, "orders-value", ORDER)
    allow(admin, "alice", ResourceType.TOPIC, "payments", AclOperation.WRITE)
    sr = SchemaRegistryClient({"url": secured.url, "basic.auth.user.info": f"alice:{PASSWORDS['alice']}"})
    schema_id = sr.register_schema("payments-value", Schema(PAYMENT, "AVRO"))
    assert json.loads(sr.get_schema(schema_id).schema_str or "null") == json.loads(PAYMENT)
    latest = sr.get_latest_version("payments-value")
    assert (latest.schema_id, latest.version) == (schema_id, 1)
    assert sr.get_subjects() == ["payments-value"]
    assert sr.get_versions("payments-value") == [1]
    assert sr.lookup_schema("payments-value", Schema(PAYMENT, "AVRO")).version == 1

    with pytest.raises(SchemaRegistryError) as refused:
        sr.register_schema("orders-value", Schema(ORDER_V2, "AVRO"))
    assert (refused.value.http_status_code, refused.value.error_code) == (403, 40301)

    wrong = SchemaRegistryClient({"url": secured.url, "basic.auth.user.info": "alice:not-her-password"})
    with pytest.raises(SchemaRegistryError) as unauthorized:
        wrong.get_subjects()
    assert (unauthorized.value.http_status_code, unauthorized.value.error_code) == (401, 401)

"""Confluent's Schema Registry REST API, spoken over HTTP to a real broker's registry: registration, ids,
versions, lookups, deletes, configs, modes and every error code, as Confluent's clients expect them."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.registry.conftest import Registry

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def record(name: str, *fields: tuple[str, Any], default: dict[str, Any] | None = None) -> str:
    """An Avro record schema's text: fields as (name, type), with defaults from `default`."""
    docs = []
    for field_name, field_type in fields:
        doc: dict[str, Any] = {"name": field_name, "type": field_type}
        if default and field_name in default:
            doc["default"] = default[field_name]
        docs.append(doc)
    return json.dumps({"type": "record", "name": name, "fields": docs})


USER = record("User", ("name", "string"))
USER_WITH_AGE = record("User", ("name", "string"), ("age", "int"), default={"age": 0})
USER_WITH_AGE_NO_DEFAULT = record("User", ("name", "string"), ("age", "int"))


def register(http: httpx.Client, subject: str, schema: str, **extra: Any) -> httpx.Response:
    return http.post(f"/subjects/{subject}/versions", json={"schema": schema, **extra})


def error(response: httpx.Response) -> tuple[int, int]:
    body = response.json()
    assert isinstance(body["message"], str) and body["message"]
    return response.status_code, body["error_code"]


def test_register_answers_an_id_and_the_same_schema_keeps_it(http: httpx.Client) -> None:
    first = register(http, "users-value", USER)
    assert first.status_code == 200 and first.headers["content-type"].startswith(CONTENT_TYPE)
    schema_id = first.json()["id"]
    # Again, with other whitespace: the same version and id; under another subject: the same id.
    again = register(http, "users-value", json.dumps(json.loads(USER), indent=4))
    assert again.json()["id"] == schema_id
    assert http.get("/subjects/users-value/versions").json() == [1]
    other = register(http, "people-value", USER)
    assert other.json()["id"] == schema_id
    assert http.get("/subjects").json() == ["people-value", "users-value"]
    found = http.get(f"/schemas/ids/{schema_id}").json()
    assert json.loads(found["schema"]) == json.loads(USER) and "schemaType" not in found
    assert sorted(http.get(f"/schemas/ids/{schema_id}/subjects").json()) == ["people-value", "users-value"]
    assert sorted(
        map(tuple, (v.values() for v in http.get(f"/schemas/ids/{schema_id}/versions").json()))
    ) == [
        ("people-value", 1),
        ("users-value", 1),
    ]
    assert json.loads(http.get(f"/schemas/ids/{schema_id}/schema").text) == json.loads(USER)


def test_versions_latest_and_minus_one(http: httpx.Client) -> None:
    one = register(http, "s", USER).json()["id"]
    two = register(http, "s", USER_WITH_AGE).json()["id"]
    assert one != two
    for spec in ("latest", "-1", "2"):
        doc = http.get(f"/subjects/s/versions/{spec}").json()
        assert (doc["subject"], doc["version"], doc["id"]) == ("s", 2, two)
    assert http.get("/subjects/s/versions/1").json()["id"] == one
    assert json.loads(http.get("/subjects/s/versions/1/schema").text) == json.loads(USER)
    assert http.get("/schemas").json()[0]["subject"] == "s"
    assert [d["version"] for d in http.get("/schemas", params={"latestOnly": "true"}).json()] == [2]


def test_lookup_finds_the_version_holding_a_schema(http: httpx.Client) -> None:
    register(http, "s", USER)
    register(http, "s", USER_WITH_AGE)
    found = http.post("/subjects/s", json={"schema": USER}).json()
    assert (found["version"], found["subject"]) == (1, "s")
    assert error(http.post("/subjects/s", json={"schema": record("Other", ("x", "int"))})) == (404, 40403)
    assert error(http.post("/subjects/nobody", json={"schema": USER})) == (404, 40401)


def test_backward_is_the_default_and_refusals_are_409(http: httpx.Client) -> None:
    register(http, "s", USER)
    assert http.get("/config").json()["compatibilityLevel"] == "BACKWARD"
    refused = register(http, "s", USER_WITH_AGE_NO_DEFAULT)
    assert error(refused) == (409, 409)
    assert "age" in refused.json()["message"]
    assert http.get("/subjects/s/versions").json() == [1]
    check = http.post(
        "/compatibility/subjects/s/versions/latest",
        params={"verbose": "true"},
        json={"schema": USER_WITH_AGE_NO_DEFAULT},
    ).json()
    assert check["is_compatible"] is False and check["messages"]
    ok = http.post("/compatibility/subjects/s/versions/latest", json={"schema": USER_WITH_AGE}).json()
    assert ok == {"is_compatible": True}


def test_each_compatibility_level(http: httpx.Client) -> None:
    """Adding a field without a default: FORWARD allows it, BACKWARD refuses it. Removing one without a
    default: BACKWARD allows it, FORWARD refuses it. FULL refuses both; NONE allows both."""
    removed_name = record("User", ("age", "int"))
    cases = {
        "BACKWARD": (False, True),
        "FORWARD": (True, False),
        "FULL": (False, False),
        "NONE": (True, True),
    }
    for level, (add_ok, remove_ok) in cases.items():
        for change, ok in (("add", add_ok), ("remove", remove_ok)):
            subject = f"{level}-{change}"
            base = record("User", ("name", "string"), ("age", "int")) if change == "remove" else USER
            register(http, subject, base)
            assert (
                http.put(f"/config/{subject}", json={"compatibility": level}).json()["compatibility"] == level
            )
            changed = USER_WITH_AGE_NO_DEFAULT if change == "add" else removed_name
            answer = register(http, subject, changed)
            assert (answer.status_code == 200) is ok, (level, change, answer.text)


def test_transitive_levels_check_every_version(http: httpx.Client) -> None:
    # v1 has no age; v2 adds age with a default; v3 drops the default. v3 reads v2's data, not v1's.
    for subject, level, ok in (("plain", "BACKWARD", True), ("transitive", "BACKWARD_TRANSITIVE", False)):
        http.put(f"/config/{subject}", json={"compatibility": level})
        register(http, subject, USER)
        register(http, subject, USER_WITH_AGE)
        answer = register(http, subject, USER_WITH_AGE_NO_DEFAULT)
        assert (answer.status_code == 200) is ok, answer.text


def test_config_global_and_per_subject(http: httpx.Client) -> None:
    assert error(http.get("/config/s")) == (404, 40408)
    assert (
        http.get("/config/s", params={"defaultToGlobal": "true"}).json()["compatibilityLevel"] == "BACKWARD"
    )
    assert http.put("/config", json={"compatibility": "full"}).json()["compatibility"] == "FULL"
    assert http.get("/config/s", params={"defaultToGlobal": "true"}).json()["compatibilityLevel"] == "FULL"
    http.put("/config/s", json={"compatibility": "NONE"})
    assert http.get("/config/s").json()["compatibilityLevel"] == "NONE"
    assert http.delete("/config/s").json()["compatibilityLevel"] == "NONE"
    assert error(http.get("/config/s")) == (404, 40408)
    assert error(http.put("/config", json={"compatibility": "SIDEWAYS"})) == (422, 42203)
    assert http.delete("/config").json()["compatibilityLevel"] == "FULL"
    assert http.get("/config").json()["compatibilityLevel"] == "BACKWARD"


def test_soft_then_permanent_deletes(http: httpx.Client) -> None:
    one = register(http, "s", USER).json()["id"]
    register(http, "s", USER_WITH_AGE)
    assert error(http.delete("/subjects/s/versions/1", params={"permanent": "true"})) == (404, 40407)
    assert http.delete("/subjects/s/versions/1").json() == 1
    assert error(http.delete("/subjects/s/versions/1")) == (404, 40406)
    assert http.get("/subjects/s/versions").json() == [2]
    assert http.get("/subjects/s/versions", params={"deleted": "true"}).json() == [1, 2]
    assert error(http.get("/subjects/s/versions/1")) == (404, 40402)
    assert http.get("/subjects/s/versions/1", params={"deleted": "true"}).json()["id"] == one
    assert http.get(f"/schemas/ids/{one}").status_code == 200  # soft-deleted: still served by id
    assert error(http.delete("/subjects/s", params={"permanent": "true"})) == (404, 40405)
    assert http.delete("/subjects/s").json() == [2]
    assert error(http.delete("/subjects/s")) == (404, 40404)
    assert http.get("/subjects").json() == []
    assert http.get("/subjects", params={"deleted": "true"}).json() == ["s"]
    assert http.get("/subjects", params={"deletedOnly": "true"}).json() == ["s"]
    assert error(http.get("/subjects/s/versions")) == (404, 40401)
    assert http.delete("/subjects/s", params={"permanent": "true"}).json() == [1, 2]
    assert http.get("/subjects", params={"deleted": "true"}).json() == []
    assert error(http.get(f"/schemas/ids/{one}")) == (404, 40403)
    # Registered again, the schema gets its id back; the versions start over.
    again = register(http, "s", USER).json()
    assert again == {"id": one, "version": 1}


def test_a_new_version_after_a_soft_delete_takes_the_next_number(http: httpx.Client) -> None:
    register(http, "s", USER)
    http.delete("/subjects/s/versions/1")
    assert register(http, "s", USER).json()["version"] == 2


def test_modes_readonly_and_import(http: httpx.Client) -> None:
    assert http.get("/mode").json() == {"mode": "READWRITE"}
    assert error(http.get("/mode/s")) == (404, 40409)
    assert http.put("/mode/s", json={"mode": "READONLY"}).json() == {"mode": "READONLY"}
    assert error(register(http, "s", USER)) == (422, 42205)
    assert http.delete("/mode/s").json() == {"mode": "READONLY"}
    assert register(http, "s", USER).status_code == 200
    assert error(http.put("/mode", json={"mode": "SIDEWAYS"})) == (422, 42204)
    # IMPORT refuses a registry that holds subjects, unless forced; then takes the ids and versions given.
    assert error(http.put("/mode", json={"mode": "IMPORT"})) == (422, 42205)
    assert error(register(http, "imported", USER_WITH_AGE, id=100, version=7)) == (422, 42205)
    assert http.put("/mode", params={"force": "true"}, json={"mode": "IMPORT"}).json() == {"mode": "IMPORT"}
    assert register(http, "imported", USER_WITH_AGE, id=100, version=7).json() == {"id": 100, "version": 7}
    assert http.get("/subjects/imported/versions/7").json()["id"] == 100
    # Another schema may not take an id in use.
    assert error(register(http, "other", record("Other", ("x", "int")), id=100, version=1)) == (422, 42207)
    http.put("/mode", json={"mode": "READWRITE"})
    fresh = register(http, "fresh", record("Fresh", ("x", "int"))).json()
    assert fresh["id"] > 100  # ids handed out later start above the imported ones


def test_references_to_named_types_of_another_subject(http: httpx.Client) -> None:
    address = json.dumps({"type": "record", "name": "Address", "namespace": "acme", "fields": [
        {"name": "street", "type": "string"}]})  # fmt: skip
    register(http, "address", address)
    customer = json.dumps({"type": "record", "name": "Customer", "namespace": "acme", "fields": [
        {"name": "home", "type": "acme.Address"}]})  # fmt: skip
    refs = [{"name": "acme.Address", "subject": "address", "version": 1}]
    assert error(register(http, "customer-value", customer)) == (422, 42201)  # not without its reference
    answer = register(http, "customer-value", customer, references=refs)
    assert answer.status_code == 200, answer.text
    doc = http.get(f"/schemas/ids/{answer.json()['id']}").json()
    assert doc["references"] == refs
    assert http.get("/subjects/address/versions/1/referencedby").json() == [answer.json()["id"]]
    assert error(http.delete("/subjects/address/versions/1")) == (422, 42206)
    assert error(http.delete("/subjects/address")) == (422, 42206)


def test_json_schema_and_protobuf(http: httpx.Client) -> None:
    json_schema = json.dumps({"type": "object", "properties": {"id": {"type": "integer"}}})
    answer = register(http, "j", json_schema, schemaType="JSON")
    assert answer.status_code == 200, answer.text
    assert http.get(f"/schemas/ids/{answer.json()['id']}").json()["schemaType"] == "JSON"
    proto = 'syntax = "proto3";\npackage acme;\nmessage Order { int64 id = 1; string item = 2; }\n'
    answer = register(http, "p", proto, schemaType="PROTOBUF")
    assert answer.status_code == 200, answer.text
    doc = http.get(f"/schemas/ids/{answer.json()['id']}").json()
    assert doc["schemaType"] == "PROTOBUF" and "Order" in doc["schema"]
    serialized = http.get(f"/schemas/ids/{answer.json()['id']}", params={"format": "serialized"}).json()[
        "schema"
    ]
    assert serialized != doc["schema"]
    assert sorted(http.get("/schemas/types").json()) == ["AVRO", "JSON", "PROTOBUF"]


def test_bad_input_gets_clear_errors_and_the_registry_keeps_serving(http: httpx.Client) -> None:
    assert error(register(http, "s", '{"type": "record", "name": "X"}')) == (422, 42201)  # no fields
    assert error(register(http, "s", "not json at all")) == (422, 42201)
    assert error(register(http, "s", USER, schemaType="XML")) == (422, 42201)
    assert error(
        http.post("/subjects/s/versions", content=b"{not json", headers={"content-type": CONTENT_TYPE})
    ) == (
        400,
        400,
    )
    assert error(http.post("/subjects/s/versions", json=[1, 2])) == (422, 422)
    assert error(http.post("/subjects/s/versions", json={"schemaType": "AVRO"})) == (422, 42201)
    assert error(http.get("/subjects/s/versions/zero")) == (422, 42202)
    assert error(http.get("/subjects/s/versions/0")) == (422, 42202)
    assert error(http.get("/no/such/path")) == (404, 404)
    assert error(http.patch("/subjects")) == (405, 405)
    assert error(http.get("/schemas/ids/424242")) == (404, 40403)
    assert error(http.get("/schemas/ids/abc")) == (404, 404)
    assert error(http.get("/subjects/none/versions/1")) == (404, 40401)
    huge = json.dumps({"type": "record", "name": "Huge", "fields": [
        {"name": f"f{i}_" + "x" * 200, "type": "string"} for i in range(50_000)]})  # fmt: skip
    assert len(huge) > 8 * 1024 * 1024
    assert error(register(http, "s", huge)) == (413, 413)
    deep = "[" * 100_000 + "]" * 100_000
    assert error(http.post("/subjects/s/versions", content=deep.encode())) == (400, 400)
    nested = '{"type": "array", "items": ' * 3000 + '"string"' + "}" * 3000  # deeper than the parser's stack
    assert error(register(http, "s", nested)) == (422, 42201)
    # After all that, the registry still serves.
    assert register(http, "s", USER).status_code == 200
    assert http.get("/subjects").json() == ["s"]


def test_ids_and_versions_survive_a_restart_and_a_second_broker_serves_them(
    registry_factory: Any, broker_factory: Any
) -> None:
    first = registry_factory()
    with first.client() as http:
        ids = [register(http, f"s{i}", record(f"R{i}", ("x", "int"))).json()["id"] for i in range(5)]
    first.broker.stop()
    second = registry_factory()
    with second.client() as http:
        assert [http.get(f"/subjects/s{i}/versions/latest").json()["id"] for i in range(5)] == ids
        assert register(http, "s5", record("R5", ("x", "int"))).json()["id"] > max(ids)
    third = registry_factory()  # two brokers on one Redis at once: the same registry
    with second.client() as a, third.client() as b:
        made = register(a, "both", USER).json()["id"]
        assert b.get(f"/schemas/ids/{made}").status_code == 200
        assert register(b, "both", USER).json() == {"id": made, "version": 1}


def test_registry_port_off(broker_factory: Any) -> None:
    running = broker_factory(schema_registry_port=0)
    assert running.broker.registry_server is None


def test_registry_root_and_metadata(http: httpx.Client, registry: Registry) -> None:
    assert http.get("/").json() == {}
    assert http.get("/contexts").json() == ["."]
    assert http.get("/v1/metadata/id").json()["scope"]["clusters"]["kafka-cluster"]


def test_a_subject_with_an_encoded_slash(http: httpx.Client) -> None:
    assert register(http, "team%2Forders-value", USER).json()["version"] == 1
    assert http.get("/subjects").json() == ["team/orders-value"]
    assert http.get("/subjects/team%2Forders-value/versions/latest").json()["subject"] == "team/orders-value"
    assert http.put("/config/team%2Forders-value", json={"compatibility": "NONE"}).status_code == 200
    assert http.delete("/subjects/team%2Forders-value").json() == [1]


def test_a_reference_to_version_minus_one_is_the_latest_pinned(http: httpx.Client) -> None:
    register(http, "address", json.dumps({"type": "record", "name": "Address", "fields": [
        {"name": "street", "type": "string"}]}))  # fmt: skip
    customer = json.dumps(
        {"type": "record", "name": "Customer", "fields": [{"name": "a", "type": "Address"}]}
    )
    refs = [{"name": "Address", "subject": "address", "version": -1}]
    answer = register(http, "customer", customer, references=refs)
    assert answer.status_code == 200, answer.text
    assert http.get("/subjects/customer/versions/1").json()["references"][0]["version"] == 1
    assert (
        http.post("/subjects/customer", json={"schema": customer, "references": refs}).json()["version"] == 1
    )


def test_more_answers_as_confluents(http: httpx.Client) -> None:
    assert error(register(http, "s", USER, references=1)) == (422, 422)
    assert error(register(http, "s", USER, references={"name": "x"})) == (422, 422)
    empty = register(http, "s", "  ")
    assert error(empty) == (422, 42201) and empty.json()["message"] == "Empty schema"
    assert error(http.get("/schemas/ids/invalid")) == (404, 404)
    assert error(http.post("/compatibility/subjects/none/versions/3", json={"schema": USER})) == (404, 40402)
    # A JSON Schema written with another key order is found by a lookup.
    register(http, "j", json.dumps({"type": "object", "title": "T"}), schemaType="JSON")
    found = http.post(
        "/subjects/j", json={"schema": json.dumps({"title": "T", "type": "object"}), "schemaType": "JSON"}
    )
    assert found.status_code == 200 and found.json()["version"] == 1


def test_content_negotiation(http: httpx.Client) -> None:
    assert (
        http.get("/subjects", headers={"accept": "application/json"})
        .headers["content-type"]
        .startswith("application/json")
    )
    preferred = "application/json; q=0.5, application/vnd.schemaregistry+json; q=0.9"
    answer = http.get("/subjects", headers={"accept": preferred})
    assert answer.headers["content-type"].startswith("application/vnd.schemaregistry+json")
    assert http.get("/subjects", headers={"accept": "*/*"}).headers["content-type"].startswith(CONTENT_TYPE)
    for accept in ("text/html", "application/vnd.schemaregistry.v2+json"):
        assert error(http.get("/subjects", headers={"accept": accept})) == (406, 406)
    refused = http.put("/config", content=b'{"compatibility": "NONE"}', headers={"content-type": "text/html"})
    assert error(refused) == (415, 415)
    assert http.get("/config").json()["compatibilityLevel"] == "BACKWARD"  # nothing changed

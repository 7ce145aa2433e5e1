"""python-schema-registry-client, a client written apart from Confluent's, against the broker's registry:
its registration (a lookup first, then a POST), schemas by id, versions, lookups, compatibility checks and
levels (per subject and global), deletes, Avro and JSON schemas, and its Avro message serializer."""

from __future__ import annotations

import json
import struct
from typing import Any

import httpx
import pytest
from schema_registry.client import SchemaRegistryClient, schema
from schema_registry.client.errors import ClientError
from schema_registry.client.schema import SubjectVersion
from schema_registry.serializers import AvroMessageSerializer, JsonMessageSerializer

from tests.registry.conftest import Registry

USER: dict[str, Any] = {"type": "record", "name": "User", "namespace": "acme", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}  # fmt: skip
USER_WITH_EMAIL: dict[str, Any] = {"type": "record", "name": "User", "namespace": "acme", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
    {"name": "email", "type": ["null", "string"], "default": None}]}  # fmt: skip
USER_WITH_EMAIL_NO_DEFAULT: dict[str, Any] = {"type": "record", "name": "User", "namespace": "acme",
    "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
               {"name": "email", "type": "string"}]}  # fmt: skip
EVENT: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Event",
    "type": "object",
    "properties": {"id": {"type": "integer"}, "kind": {"type": "string"}},
    "required": ["id"],
}


def code_of(e: ClientError) -> tuple[int | None, int]:
    """The HTTP status and Confluent's error code of a refusal (the client keeps the error body)."""
    body: Any = e.server_traceback
    return e.http_code, body["error_code"]


def client(registry: Registry) -> SchemaRegistryClient:
    """A new client (its caches empty), so each call below reaches the registry."""
    return SchemaRegistryClient(url=registry.url)


def test_register_then_fetch_by_id_subject_and_version(registry: Registry) -> None:
    """register answers an id; get_by_id, get_schema, get_versions and get_schema_subject_versions read it
    back; the same schema from a fresh client (found by its lookup) keeps the id."""
    sr = client(registry)
    schema_id = sr.register("users-value", schema.AvroSchema(USER))
    assert isinstance(schema_id, int) and schema_id > 0
    assert client(registry).register("users-value", schema.AvroSchema(USER)) == schema_id
    assert client(registry).register("people-value", json.dumps(USER)) == schema_id  # the same id

    fetched = client(registry).get_by_id(schema_id)
    assert isinstance(fetched, schema.AvroSchema)
    assert fetched == schema.AvroSchema(USER) and fetched.name == "acme.User"
    assert client(registry).get_by_id(424242) is None

    found = client(registry).get_schema("users-value")
    assert found is not None
    assert (found.subject, found.schema_id, found.version) == ("users-value", schema_id, 1)
    assert found.schema == schema.AvroSchema(USER)
    assert client(registry).get_schema("users-value", version=7) is None
    assert client(registry).get_schema("nobody-value") is None

    uses = client(registry).get_schema_subject_versions(schema_id) or []
    assert sorted(uses, key=lambda use: use.subject) == [
        SubjectVersion("people-value", 1),
        SubjectVersion("users-value", 1),
    ]
    assert client(registry).get_schema_subject_versions(424242) is None
    assert sorted(client(registry).get_subjects()) == ["people-value", "users-value"]


def test_versions_and_check_version(registry: Registry) -> None:
    """A compatible change is version 2 with a new id; check_version (POST /subjects/{subject}) finds the
    version of each schema, and None for one the subject does not hold."""
    sr = client(registry)
    one = sr.register("users-value", schema.AvroSchema(USER))
    two = sr.register("users-value", schema.AvroSchema(USER_WITH_EMAIL))
    assert one != two
    assert client(registry).get_versions("users-value") == [1, 2]
    assert client(registry).get_versions("nobody-value") == []

    for body, schema_id, version in ((USER, one, 1), (USER_WITH_EMAIL, two, 2)):
        found = client(registry).check_version("users-value", schema.AvroSchema(body))
        assert found is not None
        assert (found.subject, found.schema_id, found.version) == ("users-value", schema_id, version)
        assert json.loads(found.schema) == body
    other = schema.AvroSchema({"type": "record", "name": "Other", "fields": [{"name": "x", "type": "int"}]})
    assert client(registry).check_version("users-value", other) is None
    assert client(registry).check_version("nobody-value", other) is None
    latest = client(registry).get_schema("users-value", version="latest")
    assert latest is not None and (latest.version, latest.schema_id) == (2, two)


def test_compatibility_checks_and_an_incompatible_registration(registry: Registry) -> None:
    """test_compatibility says True for a field added with a default, False (with messages when verbose)
    for one without; registering the latter is the client's "Incompatible schema" (409)."""
    sr = client(registry)
    sr.register("users-value", schema.AvroSchema(USER))
    assert sr.test_compatibility("users-value", schema.AvroSchema(USER_WITH_EMAIL)) is True
    assert sr.test_compatibility("users-value", schema.AvroSchema(USER_WITH_EMAIL_NO_DEFAULT)) is False
    verbose = sr.test_compatibility(
        "users-value", schema.AvroSchema(USER_WITH_EMAIL_NO_DEFAULT), verbose=True
    )
    assert isinstance(verbose, dict)
    assert verbose["is_compatible"] is False and verbose["messages"]
    assert sr.test_compatibility("users-value", schema.AvroSchema(USER_WITH_EMAIL), version=1) is True
    assert sr.test_compatibility("users-value", schema.AvroSchema(USER), version=9) is False  # no v9

    with pytest.raises(ClientError) as refused:
        sr.register("users-value", schema.AvroSchema(USER_WITH_EMAIL_NO_DEFAULT))
    assert code_of(refused.value) == (409, 409)
    assert sr.get_versions("users-value") == [1]


def test_compatibility_levels_per_subject_and_global(registry: Registry) -> None:
    """update_compatibility and get_compatibility, for a subject (PUT/GET /config/{subject}) and for the
    registry (the client asks /config/, with a trailing slash); the levels are in force."""
    sr = client(registry)
    assert sr.get_compatibility() == "BACKWARD"
    with pytest.raises(ClientError) as unset:  # no level of its own: Confluent's 40408
        sr.get_compatibility("users-value")
    assert code_of(unset.value) == (404, 40408)

    assert sr.update_compatibility("NONE", "users-value") is True
    assert sr.get_compatibility("users-value") == "NONE"
    sr.register("users-value", schema.AvroSchema(USER))
    # NONE lets an incompatible version in.
    sr.register("users-value", schema.AvroSchema(USER_WITH_EMAIL_NO_DEFAULT))
    assert sr.get_versions("users-value") == [1, 2]

    assert sr.update_compatibility("FORWARD") is True
    assert sr.get_compatibility() == "FORWARD"
    with httpx.Client(base_url=registry.url) as http:
        assert http.get("/config").json()["compatibilityLevel"] == "FORWARD"
    assert sr.get_compatibility("users-value") == "NONE"  # its own level stays
    # Under FORWARD, a field removed without a default breaks old readers: refused.
    sr.register("orders-value", schema.AvroSchema(USER_WITH_EMAIL_NO_DEFAULT))
    assert sr.test_compatibility("orders-value", schema.AvroSchema(USER)) is False
    assert sr.test_compatibility("orders-value", schema.AvroSchema(USER_WITH_EMAIL_NO_DEFAULT)) is True
    with pytest.raises(ClientError):
        sr.update_compatibility("SIDEWAYS")


def test_delete_version_and_subject(registry: Registry) -> None:
    """delete_version answers the version; delete_subject the versions left; afterwards the subject has
    none, and deleting what is not there answers None / []."""
    sr = client(registry)
    one = sr.register("users-value", schema.AvroSchema(USER))
    sr.register("users-value", schema.AvroSchema(USER_WITH_EMAIL))
    sr.register("orders-value", schema.AvroSchema(USER))
    assert sr.delete_version("users-value", 2) == 2
    assert sr.delete_version("users-value", 2) is None  # already (soft) deleted
    assert sr.get_versions("users-value") == [1]
    assert sr.delete_subject("users-value") == [1]
    assert client(registry).get_versions("users-value") == []
    assert client(registry).get_schema("users-value") is None
    assert client(registry).get_subjects() == ["orders-value"]
    assert client(registry).delete_subject("users-value") == []  # Confluent's 40404: the client's []
    assert client(registry).delete_subject("nobody-value") == []
    assert client(registry).get_by_id(one) is not None  # orders-value still holds the schema


def test_json_schemas(registry: Registry) -> None:
    """A JsonSchema registers as schemaType JSON, comes back by id as a JsonSchema, is found by
    check_version, and JsonMessageSerializer round-trips a record with it."""
    sr = client(registry)
    event = schema.JsonSchema(EVENT)
    schema_id = sr.register("events-value", event)
    with httpx.Client(base_url=registry.url) as http:
        assert http.get(f"/schemas/ids/{schema_id}").json()["schemaType"] == "JSON"
    fetched = client(registry).get_by_id(schema_id)
    assert isinstance(fetched, schema.JsonSchema) and fetched.raw_schema == EVENT
    found = client(registry).check_version("events-value", EVENT, schema_type="JSON")
    assert found is not None and (found.schema_id, found.version) == (schema_id, 1)
    assert client(registry).register("events-value", json.dumps(EVENT), schema_type="JSON") == schema_id

    record = {"id": 7, "kind": "click"}
    encoded = JsonMessageSerializer(sr).encode_record_with_schema("events-value", event, record)
    assert encoded[:5] == struct.pack(">bI", 0, schema_id)
    assert JsonMessageSerializer(client(registry)).decode_message(encoded) == record


def test_avro_message_serializer_round_trip(registry: Registry) -> None:
    """AvroMessageSerializer registers the schema, writes Confluent's framing (magic byte 0, the id big
    endian, then Avro binary), and another serializer with its own client decodes it by id; a reader
    schema resolves a newer writer's record."""
    writer = AvroMessageSerializer(client(registry))
    user = schema.AvroSchema(USER)
    record = {"name": "ada", "age": 36}
    encoded = writer.encode_record_with_schema("users-value", user, record)
    registered = client(registry).get_schema("users-value")
    assert registered is not None
    schema_id = registered.schema_id
    assert encoded[:5] == struct.pack(">bI", 0, schema_id)
    assert encoded[5:] == b"\x06ada\x48"  # "ada" (length 3, zigzag 6) and 36 (zigzag 72)
    assert AvroMessageSerializer(client(registry)).decode_message(encoded) == record
    assert writer.encode_record_with_schema_id(schema_id, record) == encoded

    newer = writer.encode_record_with_schema(
        "users-value", schema.AvroSchema(USER_WITH_EMAIL), {"name": "bo", "age": 5, "email": "bo@acme"}
    )
    assert newer[1:5] != encoded[1:5]  # version 2, a new id
    assert client(registry).get_versions("users-value") == [1, 2]
    assert AvroMessageSerializer(client(registry)).decode_message(newer) == {
        "name": "bo",
        "age": 5,
        "email": "bo@acme",
    }
    # The serializer hands its reader schema to fastavro as it is: a parsed one, not an AvroSchema.
    old_reader = AvroMessageSerializer(client(registry), reader_schema=user.schema)  # type: ignore[arg-type]
    assert old_reader.decode_message(newer) == {"name": "bo", "age": 5}

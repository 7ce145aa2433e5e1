"""`schooner schemas` against a broker's real schema registry (click's runner, in this process), and
`schooner produce`/`schooner consume` with --value-format/--key-format avro, json and protobuf as real
subprocesses: what one writes in the wire format the other decodes back to the same JSON, and what does
not decode is an error line while reading goes on."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.ops.cli import main
from schooner.storage.redis.embedded import free_port
from tests.broker.sasl_rig import SASL_LISTENER, add_user, sasl_bootstrap
from tests.clients import Rec, confluent_produce
from tests.ops.cli_rig import refused, schooner, text


@dataclass
class Registry:
    broker: Any
    url: str


@pytest.fixture
def registry(broker_factory: Callable[..., Any]) -> Registry:
    """A broker serving its schema registry on a free port (tests/registry/conftest.py has the same one,
    out of reach of tests here)."""
    port = free_port()
    return Registry(broker_factory(schema_registry_port=port), f"http://127.0.0.1:{port}")


def record(name: str, *fields: tuple[Any, ...]) -> str:
    """An Avro record schema's text; a field given as (name, type, default) has that default."""
    docs = [{"name": f[0], "type": f[1], **({"default": f[2]} if len(f) > 2 else {})} for f in fields]
    return json.dumps({"type": "record", "name": name, "namespace": "shop", "fields": docs})


ORDER = record("Order", ("id", "long"), ("item", "string"))
ORDER_V2 = record("Order", ("id", "long"), ("item", "string"), ("qty", "int", 1))  # BACKWARD compatible
ORDER_BAD = record("Order", ("id", "string"))  # id long -> string: no version can read the other's


def write(tmp_path: Path, name: str, content: str) -> str:
    path = tmp_path / name
    path.write_text(content)
    return str(path)


def cli(reg: Registry, *args: str) -> Result:
    """`schooner schemas ARGS --registry URL`, in this process."""
    return CliRunner().invoke(main, ["schemas", *args, "--registry", reg.url])


def ok(result: Result) -> str:
    assert result.exit_code == 0, (result.exit_code, result.output, result.exception)
    return result.stdout


def as_json(result: Result) -> Any:
    return json.loads(ok(result))


def failed(result: Result, *expected: str) -> str:
    """A refused command: exit 1, one `Error:` line on stderr with each of `expected`, no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for part in expected:
        assert part in lines[0], lines[0]
    return lines[0]


def test_register_then_list_versions_and_get(registry: Registry, tmp_path: Path) -> None:
    v1, v2 = write(tmp_path, "v1.avsc", ORDER), write(tmp_path, "v2.avsc", ORDER_V2)
    first = as_json(cli(registry, "register", "orders-value", v1, "-o", "json"))
    assert first["subject"] == "orders-value" and first["version"] == 1 and first["id"] >= 1
    second = as_json(cli(registry, "register", "orders-value", v2, "-o", "json"))
    assert second["version"] == 2 and second["id"] != first["id"]
    # The same schema again is found, not added; the table form prints the same facts.
    again = ok(cli(registry, "register", "orders-value", v1))
    assert again.split() == ["subject", "orders-value", "id", str(first["id"]), "version", "1"]
    # A schema referring to another by name, with --reference.
    customer = write(tmp_path, "customer.avsc", record("Customer", ("name", "string")))
    ok(cli(registry, "register", "customer-value", customer))
    invoice = json.dumps({"type": "record", "name": "Invoice", "namespace": "shop",
                          "fields": [{"name": "to", "type": "shop.Customer"}]})  # fmt: skip
    refers = write(tmp_path, "invoice.avsc", invoice)
    without = cli(registry, "register", "invoices-value", refers)
    failed(without, "shop.Customer")  # Avro's own reason: the name is unknown without the reference
    ok(cli(registry, "register", "invoices-value", refers, "--reference", "shop.Customer=customer-value:1"))

    assert ok(cli(registry, "list")).split() == [
        "SUBJECT",
        "customer-value",
        "invoices-value",
        "orders-value",
    ]
    assert as_json(cli(registry, "list", "-o", "json")) == [
        {"subject": "customer-value"}, {"subject": "invoices-value"}, {"subject": "orders-value"},
    ]  # fmt: skip
    versions = as_json(cli(registry, "versions", "orders-value", "-o", "json"))
    assert versions == [
        {"version": 1, "id": first["id"], "type": "AVRO", "deleted": False},
        {"version": 2, "id": second["id"], "type": "AVRO", "deleted": False},
    ]
    latest = cli(registry, "get", "orders-value")
    assert json.loads(ok(latest)) == json.loads(ORDER_V2)  # the text alone on stdout, as the registry has it
    assert latest.stderr.strip() == f"orders-value version 2, id {second['id']}, AVRO"
    assert json.loads(ok(cli(registry, "get", "orders-value", "1"))) == json.loads(ORDER)
    by_id = cli(registry, "get", "--id", str(first["id"]))
    assert json.loads(ok(by_id)) == json.loads(ORDER) and by_id.stderr.strip() == f"id {first['id']}, AVRO"
    whole = as_json(cli(registry, "get", "invoices-value", "latest", "-o", "json"))
    assert whole["subject"] == "invoices-value" and whole["version"] == 1 and whole["schemaType"] == "AVRO"
    assert whole["references"] == [{"name": "shop.Customer", "subject": "customer-value", "version": 1}]
    shown = cli(registry, "get", "invoices-value")
    assert shown.stderr.strip().endswith("AVRO, shop.Customer=customer-value:1")
    # JSON Schema by --type, Protobuf by the file's name.
    schema = '{"type": "object", "properties": {"n": {"type": "integer"}}}'
    ok(cli(registry, "register", "counts-value", write(tmp_path, "n.json", schema), "--type", "json"))
    proto = write(tmp_path, "p.proto", 'syntax = "proto3";\nmessage P { string s = 1; }\n')
    ok(cli(registry, "register", "p-value", proto))
    assert [v["type"] for v in as_json(cli(registry, "versions", "counts-value", "-o", "json"))] == ["JSON"]
    assert [v["type"] for v in as_json(cli(registry, "versions", "p-value", "-o", "json"))] == ["PROTOBUF"]
    assert "message P" in ok(cli(registry, "get", "p-value"))


def test_check_says_compatible_or_why_not(registry: Registry, tmp_path: Path) -> None:
    ok(cli(registry, "register", "orders-value", write(tmp_path, "v1.avsc", ORDER)))
    v2, bad = write(tmp_path, "v2.avsc", ORDER_V2), write(tmp_path, "bad.avsc", ORDER_BAD)
    assert ok(cli(registry, "check", "orders-value", v2)) == "compatible\n"
    assert ok(cli(registry, "check", "orders-value", v2, "--version", "1")) == "compatible\n"
    refused_check = cli(registry, "check", "orders-value", bad)
    assert refused_check.exit_code == 1
    lines = refused_check.stdout.splitlines()
    assert lines[0] == "incompatible" and len(lines) >= 2, refused_check.stdout
    assert "/fields/0" in lines[1] and "long" in lines[1]  # the registry's reason, as it words it
    doc = json.loads(cli(registry, "check", "orders-value", bad, "-o", "json", "--version", "latest").stdout)
    assert doc["is_compatible"] is False and doc["messages"] and doc["subject"] == "orders-value"
    # Checking is not registering: the subject still has its one version.
    assert [v["version"] for v in as_json(cli(registry, "versions", "orders-value", "-o", "json"))] == [1]
    # Under NONE anything goes.
    ok(cli(registry, "config", "orders-value", "--set", "none"))
    assert ok(cli(registry, "check", "orders-value", bad)) == "compatible\n"
    failed(cli(registry, "check", "orders-value", v2, "--version", "7"), "Version 7 not found")


def test_config_and_mode_set_and_get(registry: Registry) -> None:
    assert as_json(cli(registry, "config", "-o", "json")) == {"compatibility": "BACKWARD", "source": "global"}
    # A subject without a level of its own shows the global one, and says so.
    assert as_json(cli(registry, "config", "orders-value", "-o", "json")) == {
        "subject": "orders-value", "compatibility": "BACKWARD", "source": "global",
    }  # fmt: skip
    assert ok(cli(registry, "config", "orders-value", "--set", "full_transitive")).split() == [
        "subject", "orders-value", "compatibility", "FULL_TRANSITIVE", "source", "subject",
    ]  # fmt: skip
    assert (
        as_json(cli(registry, "config", "orders-value", "-o", "json"))["compatibility"] == "FULL_TRANSITIVE"
    )
    ok(cli(registry, "config", "--set", "FORWARD"))
    assert as_json(cli(registry, "config", "-o", "json"))["compatibility"] == "FORWARD"
    assert as_json(cli(registry, "config", "other-value", "-o", "json"))["compatibility"] == "FORWARD"
    failed(cli(registry, "config", "--set", "SIDEWAYS"), "SIDEWAYS", "error code 42203")

    assert as_json(cli(registry, "mode", "-o", "json")) == {"mode": "READWRITE", "source": "global"}
    ok(cli(registry, "mode", "orders-value", "--set", "readonly"))
    assert as_json(cli(registry, "mode", "orders-value", "-o", "json")) == {
        "subject": "orders-value", "mode": "READONLY", "source": "subject",
    }  # fmt: skip
    assert as_json(cli(registry, "mode", "other-value", "-o", "json"))["source"] == "global"
    # The mode is in force: a read-only subject takes no schema.
    with httpx.Client(base_url=registry.url) as http:
        answer = http.post("/subjects/orders-value/versions", json={"schema": ORDER})
    assert answer.status_code == 422 and answer.json()["error_code"] == 42205
    failed(cli(registry, "mode", "--set", "SOMETIMES"), "Invalid mode 'SOMETIMES'")


def test_delete_soft_then_permanent(registry: Registry, tmp_path: Path) -> None:
    v1, v2 = write(tmp_path, "v1.avsc", ORDER), write(tmp_path, "v2.avsc", ORDER_V2)
    for subject in ("orders-value", "kept-value"):
        ok(cli(registry, "register", subject, v1))
    ok(cli(registry, "register", "orders-value", v2))
    assert (
        ok(cli(registry, "delete", "orders-value", "--version", "1")) == "deleted orders-value versions 1\n"
    )
    assert [v["version"] for v in as_json(cli(registry, "versions", "orders-value", "-o", "json"))] == [2]
    listed = as_json(cli(registry, "versions", "orders-value", "--deleted", "-o", "json"))
    assert [(v["version"], v["deleted"]) for v in listed] == [(1, True), (2, False)]
    failed(cli(registry, "get", "orders-value", "1"), "Version 1 not found")
    assert json.loads(ok(cli(registry, "get", "orders-value", "1", "--deleted"))) == json.loads(ORDER)

    assert ok(cli(registry, "delete", "orders-value")) == "deleted orders-value versions 2\n"
    assert as_json(cli(registry, "list", "-o", "json")) == [{"subject": "kept-value"}]
    assert as_json(cli(registry, "list", "--deleted", "-o", "json")) == [
        {"subject": "kept-value", "deleted": False}, {"subject": "orders-value", "deleted": True},
    ]  # fmt: skip
    # Permanent: the soft delete was done, so this finishes it; the subject is gone even from --deleted.
    done = as_json(cli(registry, "delete", "orders-value", "--permanent", "-o", "json"))
    assert done == {"subject": "orders-value", "versions": [1, 2], "permanent": True}
    assert as_json(cli(registry, "list", "--deleted", "-o", "json")) == [
        {"subject": "kept-value", "deleted": False}
    ]
    # Permanent straight away soft-deletes first, as the registry requires.
    assert ok(cli(registry, "delete", "kept-value", "--version", "latest", "--permanent")) == (
        "permanently deleted kept-value versions 1\n"
    )
    failed(cli(registry, "versions", "kept-value", "--deleted"), "Subject 'kept-value' not found")
    failed(cli(registry, "delete", "kept-value"), "Subject 'kept-value' not found", "error code 40401")


def test_refusals_are_the_registrys_message_on_one_line(registry: Registry, tmp_path: Path) -> None:
    line = failed(cli(registry, "get", "nosuch"))
    assert line == "Error: Subject 'nosuch' not found. (HTTP 404, error code 40401)"
    failed(cli(registry, "get", "--id", "999"), "error code 40403")
    ok(cli(registry, "register", "orders-value", write(tmp_path, "v1.avsc", ORDER)))
    bad = write(tmp_path, "bad.avsc", ORDER_BAD)
    failed(cli(registry, "register", "orders-value", bad), "incompatible", "HTTP 409")
    failed(cli(registry, "register", "x-value", write(tmp_path, "junk.avsc", "{not json")), "HTTP 422")
    # Nothing listening; a URL that is not one; usage errors of the command itself.
    nobody = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(main, ["schemas", "list", "--registry", nobody])
    failed(result, f"no schema registry answered at {nobody}")
    assert CliRunner().invoke(main, ["schemas", "list", "--registry", "ftp://x"]).exit_code == 2
    assert cli(registry, "get").exit_code == 2  # neither SUBJECT nor --id
    assert cli(registry, "get", "orders-value", "--id", "1").exit_code == 2
    assert cli(registry, "get", "orders-value", "first").exit_code == 2
    v1 = write(tmp_path, "again.avsc", ORDER)
    usage = cli(registry, "register", "y-value", v1, "--reference", "shop.Customer=customer-value")
    assert usage.exit_code == 2 and "not name=subject:version" in usage.stderr
    # The environment names the registry when --registry does not.
    env = {"SCHOONER_SCHEMA_REGISTRY_URL": registry.url}
    assert CliRunner(env=env).invoke(main, ["schemas", "list"]).stdout.split() == ["SUBJECT", "orders-value"]


def test_a_sasl_brokers_registry_takes_its_users(
    broker_factory: Callable[..., Any], redis_server: Any, keyspace: str, tmp_path: Path
) -> None:
    add_user(redis_server.url, keyspace, "alice", "alice-secret")
    port = free_port()
    broker = broker_factory(listeners=[SASL_LISTENER], schema_registry_port=port)
    url = f"http://127.0.0.1:{port}"
    schema = write(tmp_path, "v1.avsc", ORDER)
    run = CliRunner().invoke
    failed(run(main, ["schemas", "list", "--registry", url]), "Unauthorized", "HTTP 401")
    wrong = run(main, ["schemas", "list", "--registry", url, "--user", "alice", "--password", "nope"])
    failed(wrong, "Unauthorized", "wrong password")
    login = ["--registry", url, "--user", "alice", "--password", "alice-secret"]
    assert run(main, ["schemas", "register", "sasl-value", schema, *login]).exit_code == 0
    assert run(main, ["schemas", "list", *login]).stdout.split() == ["SUBJECT", "sasl-value"]

    # produce and consume log in to the registry as their SASL user when not told otherwise.
    sasl = ("-b", sasl_bootstrap(broker), "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism",
            "SCRAM-SHA-256", "--sasl-username", "alice", "--sasl-password", "alice-secret",
            "--registry", url)  # fmt: skip
    assert schooner("topics", "create", "sasl", *sasl[:-2]).returncode == 0
    sent = schooner("produce", "sasl", "--value-format", "avro", *sasl, stdin=b'{"id": 7, "item": "tea"}\n')
    assert sent.returncode == 0, text(sent.stderr)
    got = schooner("consume", "sasl", "--value-format", "avro", "--from-beginning", "--exit", *sasl)
    assert got.returncode == 0 and text(got.stdout).splitlines() == ['{"id":7,"item":"tea"}'], text(
        got.stderr
    )
    # Its own registry login, when given, is the one used.
    other = schooner("consume", "sasl", "--value-format", "avro", "--from-beginning", "--exit", *sasl,
                     "--registry-user", "alice", "--registry-password", "nope")  # fmt: skip
    refused(other, "Unauthorized", "wrong password")


# -- produce and consume ------------------------------------------------------------------------------


def _create(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.create_topics([NewTopic(topic, 1)]).values()
    future.result(10)


def _lines(*docs: object) -> bytes:
    return b"".join(json.dumps(d).encode() + b"\n" for d in docs)


def _produced(done: Any, count: int, topic: str) -> str:
    """The stderr of a produce that succeeded with `count` records."""
    err = text(done.stderr)
    assert done.returncode == 0, err
    assert err.splitlines()[-1].startswith(f"produced {count} record{'' if count == 1 else 's'} ")
    assert f"to {topic}, partitions 0" in err
    return err


def _refused(done: Any, *expected: str) -> str:
    """A produce or consume that failed: exit 1, no traceback, its last line the one `Error:` line (after
    the lines saying which schemas are in use), with each of `expected`."""
    err = text(done.stderr)
    assert done.returncode == 1 and "Traceback" not in err, (done.returncode, err)
    lines = err.splitlines()
    assert lines[-1].startswith("Error: ") and sum(line.startswith("Error") for line in lines) == 1, err
    for part in expected:
        assert part in lines[-1], err
    return lines[-1]


def _consumed(
    reg: Registry, topic: str, *args: str, start: tuple[str, ...] = ("--from-beginning",)
) -> tuple[list[Any], str]:
    """`schooner consume TOPIC --exit START ARGS`: its stdout lines as JSON, and its stderr."""
    done = schooner("consume", topic, *start, "--exit", "-b", reg.broker.bootstrap, "--registry", reg.url,
                    *args)  # fmt: skip
    assert done.returncode == 0, text(done.stderr)
    return [json.loads(line) for line in text(done.stdout).splitlines()], text(done.stderr)


def test_avro_values_and_keys_round_trip(registry: Registry, tmp_path: Path) -> None:
    b = ("-b", registry.broker.bootstrap, "--registry", registry.url)
    _create(registry.broker.bootstrap, "orders")
    orders = [{"id": 1, "item": "tea"}, {"id": 2, "item": "cake ☕"}]
    schema = write(tmp_path, "order.avsc", ORDER)
    sent = schooner("produce", "orders", "--value-format", "avro", "--value-schema", schema, *b,
                    stdin=_lines(*orders))  # fmt: skip
    err = _produced(sent, 2, "orders")
    assert "values as orders-value version 1, schema id " in err
    got, err = _consumed(registry, "orders", "--value-format", "avro")
    assert got == orders and err.strip() == "consumed 2 records from orders"
    # Registered under the topic's subject, as the file has it.
    assert json.loads(ok(cli(registry, "get", "orders-value"))) == json.loads(ORDER)

    # Without --value-schema: the subject's latest version, now v2 (whose qty has a default).
    ok(cli(registry, "register", "orders-value", write(tmp_path, "v2.avsc", ORDER_V2)))
    pie = {"id": 3, "item": "pie", "qty": 4}
    latest = schooner("produce", "orders", "--value-format", "avro", *b, stdin=_lines(pie))
    assert "values as orders-value version 2" in _produced(latest, 1, "orders")
    got, _ = _consumed(registry, "orders", "--value-format", "avro")
    assert got == [*orders, pie]  # each decoded with its own writer's schema

    # Keys too, and -f json puts the decoded key and value where the raw ones go.
    keyed = write(tmp_path, "key.avsc", '"string"')
    jam = b'"c1"\t{"id": 4, "item": "jam", "qty": 1}\n'
    sent = schooner("produce", "orders", "-K", "\\t", "--key-format", "avro", "--key-schema", keyed,
                    "--value-format", "avro", *b, stdin=jam)  # fmt: skip
    assert "keys as orders-key version 1" in _produced(sent, 1, "orders")
    rows, _ = _consumed(registry, "orders", "--key-format", "avro", "--value-format", "avro", "-f", "json",
                        start=("-o", "3", "-p", "0"))  # fmt: skip
    (row,) = rows
    assert row["key"] == "c1" and row["value"] == {"id": 4, "item": "jam", "qty": 1} and row["offset"] == 3
    assert "key_encoding" not in row and "value_encoding" not in row
    # A format string prints the decoded JSON where %k and %s go.
    done = schooner("consume", "orders", "-o", "3", "-p", "0", "--exit", "--key-format", "avro",
                    "--value-format", "avro", "-f", "%k=%s\\n", *b)  # fmt: skip
    assert text(done.stdout) == '"c1"={"id":4,"item":"jam","qty":1}\n', text(done.stderr)

    # A line that is not of the schema fails as a record; the others go.
    mixed = schooner("produce", "orders", "--value-format", "avro", *b,
                     stdin=b'{"id": 5, "item": "ok"}\n{"id": "five"}\nnot json\n')  # fmt: skip
    line = _refused(mixed, "2 of 3 records failed", "1 produced")
    assert "line 2: the value does not fit schema" in line
    got, _ = _consumed(registry, "orders", "--value-format", "avro", start=("-o", "4", "-p", "0"))
    assert got == [{"id": 5, "item": "ok", "qty": 1}]


def test_avro_with_a_reference_round_trips(registry: Registry, tmp_path: Path) -> None:
    """The consumer resolves the writer schema's references before it parses it."""
    b = ("-b", registry.broker.bootstrap, "--registry", registry.url)
    _create(registry.broker.bootstrap, "invoices")
    ok(
        cli(
            registry,
            "register",
            "customer",
            write(tmp_path, "c.avsc", record("Customer", ("name", "string"))),
        )
    )
    fields = [{"name": "to", "type": "shop.Customer"}, {"name": "cents", "type": "long"}]
    invoice = json.dumps({"type": "record", "name": "Invoice", "namespace": "shop", "fields": fields})
    ok(cli(registry, "register", "invoices-value", write(tmp_path, "i.avsc", invoice),
           "--reference", "shop.Customer=customer:1"))  # fmt: skip
    docs = [{"to": {"name": "Ada"}, "cents": 1250}, {"to": {"name": "Grace"}, "cents": 99}]
    _produced(
        schooner("produce", "invoices", "--value-format", "avro", *b, stdin=_lines(*docs)), 2, "invoices"
    )
    got, _ = _consumed(registry, "invoices", "--value-format", "avro")
    assert got == docs


def test_json_schema_values_round_trip(registry: Registry, tmp_path: Path) -> None:
    b = ("-b", registry.broker.bootstrap, "--registry", registry.url)
    _create(registry.broker.bootstrap, "events")
    properties = {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}
    schema = json.dumps({"type": "object", "properties": properties, "required": ["id"]})
    path = write(tmp_path, "event.json", schema)
    events = [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": []}, {"id": 3}]
    sent = schooner("produce", "events", "--value-format", "json", "--value-schema", path, *b,
                    stdin=_lines(*events))  # fmt: skip
    _produced(sent, 3, "events")
    got, _ = _consumed(registry, "events", "--value-format", "json")
    assert got == events
    assert as_json(cli(registry, "versions", "events-value", "-o", "json"))[0]["type"] == "JSON"
    # --value-file is one JSON document; --key one key, encoded once with the key's schema.
    doc = write(tmp_path, "doc.json", json.dumps({"id": 9, "tags": ["file"]}, indent=2))
    key_schema = write(tmp_path, "key.json", '{"type": "string"}')
    one = schooner("produce", "events", "--value-file", doc, "--value-format", "json", "--key", '"k9"',
                   "--key-format", "json", "--key-schema", key_schema, *b)  # fmt: skip
    assert "keys as events-key version 1" in _produced(one, 1, "events")
    rows, _ = _consumed(registry, "events", "--key-format", "json", "--value-format", "json", "-f", "json",
                        start=("-o", "3", "-p", "0"))  # fmt: skip
    assert [(r["key"], r["value"]) for r in rows] == [("k9", {"id": 9, "tags": ["file"]})]
    # A key the key's schema refuses is a usage error, before anything is sent.
    usage = schooner("produce", "events", "--key", "7", "--key-format", "json", *b, stdin=_lines({"id": 1}))
    last = text(usage.stderr).splitlines()[-1]
    assert usage.returncode == 2 and last.startswith("Error: Invalid value for --key: the key does not fit")
    assert last.endswith("7 is not of type 'string'") and "Traceback" not in text(usage.stderr)
    # The serializer validates: a value without the required id is refused before it is sent.
    bad = schooner("produce", "events", "--value-format", "json", *b, stdin=_lines({"tags": ["x"]}))
    assert "'id' is a required property" in _refused(bad, "1 of 1 records failed")
    # Read as another format, the schema's type is named as the reason.
    _, err = _consumed(registry, "events", "--value-format", "avro", "-c", "1")
    assert "is JSON, not AVRO" in err.splitlines()[0]


PROTO = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";

message Order {
  int32 id = 1;
  string item = 2;
  repeated Line lines = 3;
  google.protobuf.Timestamp at = 4;
  message Line {
    string sku = 1;
    int32 qty = 2;
  }
}

message Unused {
  string x = 1;
}
"""


def test_protobuf_values_round_trip(registry: Registry, tmp_path: Path) -> None:
    b = ("-b", registry.broker.bootstrap, "--registry", registry.url)
    _create(registry.broker.bootstrap, "parcels")
    path = write(tmp_path, "order.proto", PROTO)
    orders = [
        {"id": 1, "item": "tea", "lines": [{"sku": "t-1", "qty": 2}], "at": "2026-01-31T12:00:00Z"},
        {"id": 2, "item": "cake"},
    ]
    sent = schooner("produce", "parcels", "--value-format", "protobuf", "--value-schema", path, *b,
                    stdin=_lines(*orders))  # fmt: skip
    _produced(sent, 2, "parcels")
    # The file's text is what the registry has; the serializer found it, adding no version.
    assert ok(cli(registry, "get", "parcels-value")) == PROTO
    assert [v["version"] for v in as_json(cli(registry, "versions", "parcels-value", "-o", "json"))] == [1]
    # Without --value-schema: the latest version, whose first message is the one written.
    latest = schooner("produce", "parcels", "--value-format", "protobuf", *b, stdin=_lines({"id": 3}))
    _produced(latest, 1, "parcels")
    got, _ = _consumed(registry, "parcels", "--value-format", "protobuf")
    assert got == [*orders, {"id": 3}]
    bad = schooner("produce", "parcels", "--value-format", "protobuf", *b, stdin=_lines({"nope": 1}))
    assert "nope" in _refused(bad, "1 of 1 records failed")
    # A .proto that does not compile is refused before anything is registered or sent.
    broken = write(tmp_path, "broken.proto", 'syntax = "proto3";\nmessage Broken { strin x = 1; }\n')
    usage = schooner("produce", "parcels", "--value-format", "protobuf", "--value-schema", broken, *b,
                     stdin=_lines({"x": "y"}))  # fmt: skip
    assert usage.returncode == 2 and "strin" in refused(usage, "--value-schema")
    assert [v["version"] for v in as_json(cli(registry, "versions", "parcels-value", "-o", "json"))] == [1]


def test_records_that_do_not_decode_are_error_lines(registry: Registry, tmp_path: Path) -> None:
    b = ("-b", registry.broker.bootstrap, "--registry", registry.url)
    _create(registry.broker.bootstrap, "mixed")
    schema = write(tmp_path, "order.avsc", ORDER)
    first = schooner("produce", "mixed", "--value-format", "avro", "--value-schema", schema, *b,
                     stdin=_lines({"id": 1, "item": "first"}))  # fmt: skip
    _produced(first, 1, "mixed")
    good = confluent_produce  # records written by hand, beside the serializer's
    good(registry.broker.bootstrap, "mixed", [
        Rec(None, b"\x00\x00\x00\x03\xe7" + b"\x02\x06tea"),  # schema id 999: the registry has none
        Rec(None, b"plain text"),  # not the wire format at all
        Rec(b"tombstone", None),  # a null value decodes to null
    ])  # fmt: skip
    last = schooner("produce", "mixed", "--value-format", "avro", *b, stdin=_lines({"id": 2, "item": "last"}))
    _produced(last, 1, "mixed")

    got, err = _consumed(registry, "mixed", "--value-format", "avro")
    assert got == [{"id": 1, "item": "first"}, None, {"id": 2, "item": "last"}]
    errors = err.splitlines()
    assert errors[0].startswith("error: cannot decode the value of mixed-0 offset 1: schema id 999: ")
    assert "error code 40403" in errors[0]
    assert errors[1].startswith("error: cannot decode the value of mixed-0 offset 2: not in the wire format")
    assert errors[-1] == "consumed 5 records from mixed (2 not decoded)"
    # In -f json as well, the records that decode are printed whole and the others are error lines.
    rows, err = _consumed(registry, "mixed", "--value-format", "avro", "-f", "json")
    assert [(r["offset"], r["value"]) for r in rows] == [
        (0, {"id": 1, "item": "first"}), (3, None), (4, {"id": 2, "item": "last"}),
    ]  # fmt: skip
    assert rows[1]["key"] == "tombstone" and err.count("error: cannot decode") == 2
    # Raw (the default) is today's behaviour: the bytes as they are.
    raw = schooner("consume", "mixed", "-o", "2", "-p", "0", "-c", "1", *b)
    assert raw.stdout == b"plain text\n"
    # No registry at all is no record decoding: one error, at the first record.
    nobody = f"http://127.0.0.1:{free_port()}"
    gone = schooner("consume", "mixed", "--from-beginning", "--exit", "--value-format", "avro",
                    "-b", registry.broker.bootstrap, "--registry", nobody)  # fmt: skip
    _refused(gone, f"no schema registry answered at {nobody}")

"""`schooner groups` over the Kafka protocol with a classic group and a consumer (KIP-848) group made
by confluent-kafka: list, describe with members, lag, reset-offsets (dry run, refusal while members
are active, --execute, then a consumer reading from the new position), delete; bad input in one line."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from schooner.ops.cli import main
from tests.ops.cli_rig import groups_cli as _cli
from tests.ops.cli_rig import groups_json as _json

T = 10


def _setup(broker: Any, topic: str, per_partition: int = 5) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(T)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for p in range(2):
        for i in range(per_partition):
            producer.produce(topic, value=b"%d-%d" % (p, i), partition=p)
    assert producer.flush(T) == 0


def _consumer(broker: Any, group: str, protocol: str) -> Consumer:
    conf = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "group.protocol": protocol,
    }
    if protocol == "classic":
        conf["session.timeout.ms"] = 6000
    return Consumer(conf)


def _read(consumer: Consumer, n: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    return got


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_describe_lag_reset_and_delete(broker: Any, protocol: str) -> None:
    topic, group = f"gk-{protocol}", f"gk-{protocol}-g"
    _setup(broker, topic)
    consumer = _consumer(broker, group, protocol)
    consumer.subscribe([topic])
    assert len(_read(consumer, 10)) == 10
    consumer.commit(asynchronous=False)

    listed = {g["group"]: g for g in _json(broker, "list")}
    assert listed[group]["type"] == protocol and listed[group]["state"] == "Stable"
    described = _json(broker, "describe", group)
    assert (described["type"], described["state"]) == (protocol, "Stable")
    (member,) = described["members"]
    assert sorted(tuple(a) for a in member["assignment"]) == [(topic, 0), (topic, 1)]
    assert member["client_id"] == "rdkafka" and member["host"]
    assert (described["epoch"] is None) == (protocol == "classic")
    assert [(p["partition"], p["committed"], p["end_offset"], p["lag"]) for p in described["partitions"]] == [
        (0, 5, 5, 0),
        (1, 5, 5, 0),
    ]
    table = _cli(broker, "describe", group)
    assert f"TYPE {protocol}" in table.output and "MEMBERS 1" in table.output and "rdkafka" in table.output

    refused = _cli(broker, "reset-offsets", group, "--to-earliest", "--all-topics")
    assert refused.exit_code == 1
    assert refused.output.strip() == (
        f"Error: group {group} has 1 active member(s): stop them before resetting offsets"
    )
    consumer.close()

    dry = _cli(broker, "reset-offsets", group, "--shift-by", "-3", "--topic", f"{topic}:0", "-o", "json")
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output) == [{"topic": topic, "partition": 0, "current": 5, "new": 2}]
    assert [
        r["committed"] for r in map(json.loads, _cli(broker, "lag", group, "--json").output.splitlines())
    ] == [5, 5]  # the dry run changed nothing

    done = _cli(broker, "reset-offsets", group, "--shift-by", "-3", "--topic", f"{topic}:0", "--execute")
    assert done.exit_code == 0 and "offsets reset" in done.output
    lag = [json.loads(line) for line in _cli(broker, "lag", group, "-o", "json").output.splitlines()]
    assert [(r["partition"], r["committed"], r["lag"]) for r in lag] == [(0, 2, 3), (1, 5, 0)]

    again = _consumer(broker, group, protocol)  # reads from the new position: three records of partition 0
    again.subscribe([topic])
    assert sorted(m.value() for m in _read(again, 3)) == [b"0-2", b"0-3", b"0-4"]
    again.close()

    # --to-datetime: a time before every record is the start; --to-latest the end
    past = (datetime.now() - timedelta(hours=1)).isoformat(timespec="seconds")
    plan = _json(broker, "reset-offsets", group, "--to-datetime", past, "--topic", topic)
    assert [(r["partition"], r["new"]) for r in plan] == [(0, 0), (1, 0)]
    plan = _json(broker, "reset-offsets", group, "--to-latest", "--all-topics")
    assert [r["new"] for r in plan] == [5, 5]

    deleted = _cli(broker, "delete", group)
    assert deleted.exit_code == 0 and deleted.output.strip() == f"deleted group {group}"
    gone = _cli(broker, "describe", group)
    assert gone.exit_code == 1 and gone.output.strip() == f"Error: no group {group}"


def test_bad_input_is_one_line_and_no_traceback(broker: Any) -> None:
    _setup(broker, "gk-bad", per_partition=1)
    group = "gk-bad-g"
    consumer = _consumer(broker, group, "classic")
    consumer.subscribe(["gk-bad"])
    assert len(_read(consumer, 2)) == 2
    consumer.commit(asynchronous=False)
    consumer.close()

    cases = {
        ("describe", "gk-nobody"): "Error: no group gk-nobody",
        ("lag", "gk-nobody"): "Error: no group gk-nobody",
        ("delete", "gk-nobody"): "Error: no group gk-nobody",
        ("reset-offsets", "gk-nobody", "--to-earliest", "--all-topics"): "Error: no group gk-nobody",
        ("reset-offsets", group, "--to-earliest", "--topic", "gk-missing"): "Error: no topic gk-missing",
        (
            "reset-offsets",
            group,
            "--to-earliest",
            "--topic",
            "gk-bad:7",
        ): "Error: topic gk-bad has no partition 7 (it has 2)",
    }
    for args, line in cases.items():
        result = _cli(broker, *args)
        assert (result.exit_code, result.output.strip()) == (1, line), args

    usage = {
        ("reset-offsets", group, "--all-topics"): "give exactly one of --to-earliest",
        ("reset-offsets", group, "--to-earliest", "--to-latest", "--all-topics"): "give exactly one of",
        ("reset-offsets", group, "--to-offset", "-1", "--all-topics"): "an offset is not negative",
        ("reset-offsets", group, "--to-offset", "x", "--all-topics"): "'x' is not a valid integer",
        ("reset-offsets", group, "--to-datetime", "soon", "--all-topics"): "'soon' is not an ISO date",
        ("reset-offsets", group, "--to-earliest"): "give --topic TOPIC[:PARTITION]",
        ("reset-offsets", group, "--to-earliest", "--topic", "gk-bad:x"): "is not TOPIC or TOPIC:PARTITION",
    }
    for args, text in usage.items():
        result = _cli(broker, *args)
        assert result.exit_code == 2 and text in result.output, (args, result.output)
        assert "Traceback" not in result.output

    down = CliRunner().invoke(main, ["groups", "lag", group, "-b", "127.0.0.1:1"])
    assert (down.exit_code, down.output.strip()) == (
        1,
        "Error: no broker answered at 127.0.0.1:1 (Connection refused)",
    )
    listed = CliRunner().invoke(main, ["groups", "list", "-b", "127.0.0.1:1", "-X", "socket.timeout.ms=3000"])
    assert listed.exit_code == 1 and listed.output.startswith("Error: no broker answered at 127.0.0.1:1")
    redis_down = CliRunner().invoke(main, ["groups", "lag", group, "--redis-url", "redis://127.0.0.1:1/0"])
    assert redis_down.exit_code == 1 and redis_down.output.startswith("Error: Redis failed:")
    assert len(redis_down.output.strip().splitlines()) == 1

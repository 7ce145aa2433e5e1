"""`schooner groups` on a share group (KIP-932) made by confluent-kafka's ShareConsumer: listed as share,
described with its member and assignment and each share partition's start offset and lag, reset with
AlterShareGroupOffsets (refused while the member is active, dry run, --execute, then a share consumer
reading from the new start), and deleted with DeleteGroups."""

from __future__ import annotations

import json
from typing import Any

from tests.broker.share_rig import ShareRunner, create_topic, produce, set_group_configs, wait_for
from tests.ops.cli_rig import groups_cli as _cli
from tests.ops.cli_rig import groups_json as _json


def test_share_group_describe_lag_reset_and_delete(broker: Any) -> None:
    topic, group = "sh-cli", "sh-cli-g"
    create_topic(broker.bootstrap, topic, partitions=2)
    set_group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest")
    produce(broker.bootstrap, topic, [b"a%d" % i for i in range(4)], partition=0)
    produce(broker.bootstrap, topic, [b"b%d" % i for i in range(2)], partition=1)
    runner = ShareRunner("c1", broker.bootstrap, group, [topic]).start()
    wait_for(lambda: len(runner.deliveries) == 6, 30, "six records accepted")

    listed = {g["group"]: g for g in _json(broker, "list")}
    assert listed[group]["type"] == "share"
    wait_for(lambda: _json(broker, "describe", group)["partitions"][1]["committed"] == 2, 30, "acks applied")
    described = _json(broker, "describe", group)
    assert (described["type"], described["state"]) == ("share", "Stable") and described["epoch"] >= 1
    (member,) = described["members"]
    assert sorted(tuple(a) for a in member["assignment"]) == [(topic, 0), (topic, 1)]
    assert [(p["partition"], p["committed"], p["end_offset"], p["lag"]) for p in described["partitions"]] == [
        (0, 4, 4, 0),
        (1, 2, 2, 0),
    ]
    table = _cli(broker, "describe", group)
    assert "TYPE share" in table.output and "START OFFSET" in table.output

    refused = _cli(broker, "reset-offsets", group, "--to-earliest", "--all-topics")
    assert refused.exit_code == 1 and "has 1 active member(s)" in refused.output
    runner.stop()
    wait_for(lambda: _json(broker, "describe", group)["members"] == [], 30, "the member gone")

    dry = _json(broker, "reset-offsets", group, "--to-offset", "1", "--topic", f"{topic}:0")
    assert dry == [{"topic": topic, "partition": 0, "current": 4, "new": 1}]
    rows = [json.loads(line) for line in _cli(broker, "lag", group, "--json").output.splitlines()]
    assert [(r["partition"], r["committed"], r["lag"]) for r in rows] == [(0, 4, 0), (1, 2, 0)]

    done = _cli(broker, "reset-offsets", group, "--to-offset", "1", "--topic", f"{topic}:0", "--execute")
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in _cli(broker, "lag", group, "-o", "json").output.splitlines()]
    assert [(r["partition"], r["committed"], r["lag"]) for r in rows] == [(0, 1, 3), (1, 2, 0)]

    again = ShareRunner("c2", broker.bootstrap, group, [topic]).start()
    wait_for(lambda: len(again.deliveries) == 3, 30, "three records again")
    again.stop()
    assert sorted(d.value for d in again.deliveries) == [b"a1", b"a2", b"a3"]
    assert again.errors == []

    wait_for(lambda: _json(broker, "describe", group)["members"] == [], 30, "the member gone")
    dropped = _cli(broker, "delete-offsets", group, "--topic", topic)
    assert dropped.exit_code == 0, dropped.output
    assert _cli(broker, "lag", group, "-o", "json").output == ""  # no share partition left
    deleted = _cli(broker, "delete", group)
    assert deleted.exit_code == 0, deleted.output
    assert group not in {g["group"] for g in _json(broker, "list")}
    gone = _cli(broker, "lag", group)
    assert gone.exit_code == 1 and gone.output.strip() == f"Error: no group {group}"

"""Hand-made histories for the checker's tests: a builder, and a small clean run using every kind of
operation, which each test spoils in one place."""

from __future__ import annotations

from typing import Any

from chaos.history import Operation, Status

RU = "read_uncommitted"
RC = "read_committed"
SOURCES = ("kafka", "redis")
LogKey = tuple[str, str, str, int]  # source, isolation, topic, partition


class Run:
    """Operations are numbered when the run is finished, so tests can drop or edit them by name first;
    the final reads come last, one per source, isolation and partition."""

    def __init__(self) -> None:
        self._entries: list[dict[str, Any]] = []
        self.logs: dict[LogKey, dict[int, str]] = {}
        self.index: dict[str, int] = {}

    def add(
        self, process: str, f: str, status: Status, value: dict[str, Any], name: str | None = None
    ) -> None:
        if name is not None and any(e["name"] == name for e in self._entries):
            raise ValueError(f"two operations named {name}")
        self._entries.append({"name": name, "process": process, "f": f, "status": status, "value": value})

    def _entry(self, name: str) -> dict[str, Any]:
        return next(e for e in self._entries if e["name"] == name)

    def edit(self, name: str, status: Status | None = None, **value: Any) -> None:
        entry = self._entry(name)
        entry["value"] = {**entry["value"], **value}
        if status is not None:
            entry["status"] = status

    def drop(self, name: str) -> None:
        self._entries.remove(self._entry(name))

    def produce(
        self,
        topic: str,
        partition: int,
        value: str,
        offset: int | None,
        seq: int,
        *,
        producer: str = "p1",
        status: Status = "ok",
        transactional: bool = False,
        process: str = "producer-0",
        name: str | None = None,
        error: str | None = None,
    ) -> None:
        if error is None and status != "ok":
            error = "timed out"
        record = {"topic": topic, "partition": partition, "value": value, "offset": offset}
        extra = {"producer": producer, "seq": seq, "transactional": transactional, "error": error}
        self.add(process, "produce", status, record | extra, name or value)

    def txn(
        self,
        name: str,
        outputs: list[tuple[str, int, str]],
        *,
        status: Status = "ok",
        inputs: list[tuple[str, int, int, str]] | None = None,
        group: str | None = None,
        offsets: dict[str, int] | None = None,
        producer: str = "tx-1",
        process: str = "txn-0",
    ) -> None:
        value = {
            "producer": producer,
            "group": group,
            "inputs": [list(i) for i in inputs or []],
            "outputs": [list(o) for o in outputs],
            "offsets": offsets or {},
        }
        self.add(process, "txn", status, value, name)

    def poll(
        self,
        process: str,
        session: str,
        records: list[tuple[str, int, int, str]],
        *,
        mode: str = "reader",
        isolation: str = RU,
        group: str | None = None,
        name: str | None = None,
    ) -> None:
        value = {
            "mode": mode,
            "group": group,
            "member": process,
            "isolation": isolation,
            "session": session,
            "records": [list(r) for r in records],
        }
        self.add(process, "poll", "ok", value, name)

    def offsets(
        self, group: str, offsets: dict[str, int], *, process: str = "observer", name: str | None = None
    ) -> None:
        self.add(process, "offsets", "ok", {"group": group, "offsets": offsets}, name)

    def ack(
        self,
        group: str,
        member: str,
        records: list[tuple[str, int, int, str, int]],
        kind: str = "accept",
        *,
        status: Status = "ok",
        name: str | None = None,
    ) -> None:
        value = {"group": group, "member": member, "records": [list(r) for r in records], "type": kind}
        self.add(member, "ack", status, value, name)

    def fault(self, kind: str, healed: float, recovered: float | None) -> None:
        value = {"kind": kind, "target": "broker-0", "healed": healed, "recovered": recovered}
        self.add("nemesis", "fault", "ok", value)

    def set_log(
        self, topic: str, partition: int, ru: dict[int, str], rc: dict[int, str], hot_from: int
    ) -> None:
        """The whole log read from kafka; the redis hot tier holds the offsets from hot_from on."""
        for isolation, records in ((RU, ru), (RC, rc)):
            self.logs[("kafka", isolation, topic, partition)] = dict(records)
            self.logs[("redis", isolation, topic, partition)] = {
                o: v for o, v in records.items() if o >= hot_from
            }

    def put(
        self, topic: str, partition: int, offset: int, value: str, isolations: tuple[str, ...] = (RU, RC)
    ) -> None:
        """Writes a record into the final logs, in both tiers (the hot tier when it already reaches there)."""
        for source in SOURCES:
            for isolation in isolations:
                log = self.logs[(source, isolation, topic, partition)]
                if source == "kafka" or not log or offset >= min(log):
                    log[offset] = value

    def remove(self, topic: str, partition: int, offset: int) -> None:
        for (_source, _isolation, t, p), log in self.logs.items():
            if (t, p) == (topic, partition):
                log.pop(offset, None)

    def finish(self) -> list[Operation]:
        entries = list(self._entries)
        for (source, isolation, topic, partition), records in sorted(self.logs.items()):
            value = {
                "source": source,
                "isolation": isolation,
                "topic": topic,
                "partition": partition,
                "records": [[o, v] for o, v in sorted(records.items())],
            }
            name = f"final {source} {isolation} {topic}/{partition}"
            entries.append({"name": name, "process": "final", "f": "final", "status": "ok", "value": value})
        ops = []
        self.index = {}
        for i, e in enumerate(entries):
            ops.append(
                Operation(i, e["process"], e["f"], e["status"], i * 0.01, i * 0.01 + 0.005, e["value"])
            )
            if e["name"] is not None:
                self.index[e["name"]] = i
        return ops


def clean_run() -> Run:
    """A run without anomalies. Topics: plain (2 partitions, plain producers), tx (transactions, one
    aborted), out (a transform of plain/0 with group tg: one attempt aborted then retried)."""
    run = Run()
    plain = [f"a{i}" for i in range(7)]
    for seq, value in enumerate(plain[:5]):
        run.produce("plain", 0, value, seq, seq)
    run.produce("plain", 0, "a5", None, 5, status="unknown")  # it landed
    run.produce("plain", 0, "a6", None, 6, status="unknown")  # it did not
    run.produce("plain", 1, "b0", 0, 0, producer="p2", process="producer-1")
    run.produce("plain", 1, "b1", 1, 1, producer="p2", process="producer-1")

    # tx/0: c0 c1 (committed, marker at 2), c2 (aborted at 3, marker 4), c3 (committed at 5, marker 6)
    run.produce("tx", 0, "c0", 0, 0, producer="tp-1", transactional=True, process="txn-0")
    run.txn("t1", [("tx", 0, "c0"), ("tx", 0, "c1")])
    run.txn("t2", [("tx", 0, "c2")], status="fail")
    run.txn("t3", [("tx", 0, "c3")])

    # The transform: x1 commits a0 a1; x2 (a2 a3) aborts; x3 retries them and commits.
    def transform(name: str, offsets: list[int], status: Status, next_offset: int) -> None:
        inputs = [("plain", 0, o, plain[o]) for o in offsets]
        outputs = [("out", 0, "out:" + plain[o]) for o in offsets]
        run.txn(name, outputs, status=status, inputs=inputs, group="tg", offsets={"plain/0": next_offset},
                producer="transform-tx", process="transform-0")  # fmt: skip

    run.poll(
        "transform-0", "s1", [("plain", 0, 0, "a0"), ("plain", 0, 1, "a1")], mode="transform", isolation=RC
    )
    transform("x1", [0, 1], "ok", 2)
    run.poll(
        "transform-0", "s2", [("plain", 0, 2, "a2"), ("plain", 0, 3, "a3")], mode="transform", isolation=RC,
        name="s2",
    )  # fmt: skip
    transform("x2", [2, 3], "fail", 4)
    run.poll(
        "transform-0", "s3", [("plain", 0, 2, "a2"), ("plain", 0, 3, "a3")], mode="transform", isolation=RC
    )
    transform("x3", [2, 3], "ok", 4)

    # Readers: read_uncommitted sees the aborted c2, read_committed does not (a seek between its sessions).
    tx_ru = [("tx", 0, 0, "c0"), ("tx", 0, 1, "c1"), ("tx", 0, 3, "c2"), ("tx", 0, 5, "c3")]
    run.poll("reader-0", "r1", tx_ru, name="reader-0 tx")
    run.poll("reader-0", "r2", [("plain", 0, o, plain[o]) for o in range(3)], name="reader-0 plain 1")
    run.poll("reader-0", "r2", [("plain", 0, o, plain[o]) for o in range(3, 6)], name="reader-0 plain 2")
    run.poll("reader-1", "q1", [("tx", 0, 0, "c0"), ("tx", 0, 1, "c1")], isolation=RC, name="reader-1 tx")
    run.poll("reader-1", "q2", [("tx", 0, 5, "c3")], isolation=RC)
    run.poll("consumer-0", "g1", [("plain", 1, 0, "b0"), ("plain", 1, 1, "b1")], mode="group", group="cg")
    run.add("consumer-0", "commit", "ok", {"group": "cg", "member": "consumer-0", "offsets": {"plain/1": 2}})

    # Share group sg: out of order is fine; b1 released once, then accepted on its second delivery.
    run.poll("share-0", "h1", [("plain", 1, 1, "b1"), ("plain", 1, 0, "b0")], mode="share", group="sg")
    run.ack("sg", "share-0", [("plain", 1, 0, "b0", 1)], name="ack b0")
    run.ack("sg", "share-0", [("plain", 1, 1, "b1", 1)], "release")
    run.ack("sg", "share-1", [("plain", 1, 1, "b1", 2)], name="ack b1")
    run.ack("sg2", "share-2", [("plain", 1, 1, "b1", 1)])  # another share group may accept it too

    run.offsets("tg", {"plain/0": 2}, name="tg at 2")
    run.offsets("cg", {"plain/1": 2})
    run.offsets("tg", {"plain/0": 4}, name="tg at 4")
    run.fault("kill", 1.5, 0.5)
    run.fault("kill", 2.5, 1.5)
    run.fault("partition", 2.0, None)

    plain0 = dict(enumerate(plain[:6]))
    run.set_log("plain", 0, plain0, plain0, hot_from=2)
    run.set_log("plain", 1, {0: "b0", 1: "b1"}, {0: "b0", 1: "b1"}, hot_from=0)
    run.set_log("tx", 0, {0: "c0", 1: "c1", 3: "c2", 5: "c3"}, {0: "c0", 1: "c1", 5: "c3"}, hot_from=1)
    out_ru = {0: "out:a0", 1: "out:a1", 3: "out:a2", 4: "out:a3", 6: "out:a2", 7: "out:a3"}
    out_rc = {0: "out:a0", 1: "out:a1", 6: "out:a2", 7: "out:a3"}
    run.set_log("out", 0, out_ru, out_rc, hot_from=3)
    return run

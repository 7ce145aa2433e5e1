"""`schooner broker --log-format json`: every line a JSON object with time, level, logger and message, and a
refused request's structured fields (client_id, peer, api, reason)."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

from schooner.ops import logs
from schooner.storage.redis.embedded import free_port
from tests.broker.helpers import wait
from tests.ops.helpers import wait_for_port
from tests.wire import connect, encode_request, read_frame


def _broker(redis_url: str, keyspace: str, stderr: Path, *flags: str) -> subprocess.Popen[bytes]:
    port = free_port()
    args = [sys.executable, "-m", "schooner.ops.entry", "broker", "--redis-url", redis_url,
            "--port", str(port), "--keyspace", keyspace, *flags]  # fmt: skip
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err)
    wait_for_port(port, proc)
    proc.port = port  # type: ignore[attr-defined]
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(30)


def test_json_lines_carry_the_fields_of_a_refusal(redis_server: Any, keyspace: str, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr"
    proc = _broker(redis_server.url, keyspace, stderr, "--log-format", "json")
    try:
        with connect(proc.port) as sock:  # type: ignore[attr-defined]
            request = FindCoordinatorRequest(key_type=5, coordinator_keys=("g",))
            sock.sendall(encode_request(request, client_id="json-client"))
            assert read_frame(sock) is not None
    finally:
        _stop(proc)
    lines = [line for line in stderr.read_text().splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all({"time", "level", "logger", "message"} <= set(p) for p in parsed)
    serving = [p for p in parsed if p["logger"] == "schooner.broker.server" and "serving" in p["message"]]
    assert serving and serving[0]["level"] == "INFO"
    (refusal,) = [p for p in parsed if p.get("api") == "FIND_COORDINATOR"]
    assert refusal["level"] == "INFO" and refusal["logger"] == "schooner.broker.handlers.groups.classic"
    assert refusal["client_id"] == "json-client" and refusal["peer"].startswith("127.0.0.1:")
    assert "key type 5" in refusal["reason"] and refusal["key_type"] == 5
    assert refusal["message"].startswith("refused FIND_COORDINATOR from client 'json-client'")
    assert "principal" not in refusal  # anonymous


def test_text_is_the_default(redis_server: Any, keyspace: str, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr"
    proc = _broker(redis_server.url, keyspace, stderr)
    # The port opens just before the first line is logged: a loaded machine can stop the broker in between.
    wait(lambda: stderr.read_text().strip(), 30, "the broker logs a line")
    _stop(proc)
    first = stderr.read_text().splitlines()[0]
    assert " INFO schooner.broker" in first and not first.startswith("{")


def test_log_format_is_a_setting_and_refuses_other_values(tmp_path: Path) -> None:
    assert isinstance(logs.formatter("json"), logging.Formatter)
    with pytest.raises(ValueError, match="text, json"):
        logs.formatter("xml")
    config = tmp_path / "bad.toml"
    config.write_text('log_format = "xml"\n')
    done = subprocess.run(
        [sys.executable, "-m", "schooner.ops.entry", "broker", "--check", "--config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and "fail config: log_format 'xml'" in done.stdout


def test_configure_replaces_its_own_handler_only() -> None:
    root = logging.getLogger()
    others = list(root.handlers)
    level = root.level
    first, second = io.StringIO(), io.StringIO()
    try:
        logs.configure("INFO", "json", first)
        logs.configure("INFO", "json", second)
        logging.getLogger("schooner.test").info("hello %s", "there", extra={"client_id": "c"})
    finally:
        for h in [h for h in root.handlers if h not in others]:
            root.removeHandler(h)
        root.setLevel(level)
    assert first.getvalue() == ""
    line = json.loads(second.getvalue())
    assert line["message"] == "hello there" and line["client_id"] == "c" and line["logger"] == "schooner.test"
    assert all(h in root.handlers for h in others)

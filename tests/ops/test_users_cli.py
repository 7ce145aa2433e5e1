"""`schooner users`: set, list and delete SCRAM users without a running broker (the settings' Redis, or
the data folder's embedded one) and beside a running one (its redis-server); bad input is one line on
stderr and a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from schooner.ops.cli import main
from schooner.storage.keys import Keyspace
from schooner.storage.redis.calls import run_sync
from schooner.storage.redis.client import connect_sync
from schooner.storage.redis.embedded import EmbeddedRedis, free_port
from schooner.storage.security.users import User, get_user
from tests.broker.sasl_rig import confluent_conf
from tests.clients import Rec, confluent_produce
from tests.ops.helpers import wait_for_port

REPO = Path(__file__).resolve().parents[2]


def users(*args: str, password: str | None = None) -> Any:
    return CliRunner().invoke(main, ["users", *args], input=password)


def config_file(tmp_path: Path, **settings: str) -> str:
    path = tmp_path / "schooner.toml"
    path.write_text("".join(f'{key} = "{value}"\n' for key, value in settings.items()))
    return str(path)


def stored(url: str, keyspace: str, name: str) -> User | None:
    redis = connect_sync(url)
    try:
        return run_sync(redis, get_user(Keyspace(keyspace), name))
    finally:
        redis.close()


def test_set_list_and_delete_on_the_settings_redis(tmp_path: Path, redis_server: Any, keyspace: str) -> None:
    conf = config_file(tmp_path, redis_url=redis_server.url, keyspace=keyspace)
    done = users("set", "alice", "--mechanism", "SCRAM-SHA-256", "--password-stdin", "--tenant", "acme",
                 "--iterations", "4096", "--config", conf, password="s3cret\n")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "alice: SCRAM-SHA-256 set (4096 iterations), tenant acme" in done.output
    done = users("set", "alice", "--mechanism", "SCRAM-SHA-512", "--password-stdin", "--config", conf,
                 password="other\n")  # fmt: skip
    assert done.exit_code == 0, done.output
    alice = stored(redis_server.url, keyspace, "alice")
    assert alice is not None and alice.tenant == "acme"  # kept when --tenant is not given
    assert {m: c.iterations for m, c in alice.credentials.items()} == {
        "SCRAM-SHA-256": 4096,
        "SCRAM-SHA-512": 8192,
    }
    listed = users("list", "--config", conf)
    assert listed.exit_code == 0
    row = listed.output.splitlines()[1].split()
    assert row == ["alice", "acme", "SCRAM-SHA-256", "(4096),", "SCRAM-SHA-512", "(8192)"]
    assert users("delete", "alice", "--mechanism", "SCRAM-SHA-256", "--config", conf).exit_code == 0
    alice = stored(redis_server.url, keyspace, "alice")
    assert alice is not None and list(alice.credentials) == ["SCRAM-SHA-512"]
    assert users("delete", "alice", "--config", conf).exit_code == 0
    assert stored(redis_server.url, keyspace, "alice") is None
    assert users("list", "--config", conf).output.splitlines()[1:] == []


@pytest.mark.parametrize(
    "args,password,message",
    [
        (["set", "bob", "--mechanism", "SCRAM-SHA-256"], "pw\n", "--password-stdin"),
        (["set", "bob", "--mechanism", "SCRAM-SHA-256", "--password-stdin"], "", "no password on"),
        (["set", "bob", "--mechanism", "MD5", "--password-stdin"], "pw\n", "unknown mechanism 'MD5'"),
        (["set", "bob", "--mechanism", "SCRAM-SHA-256", "--password-stdin", "--iterations", "10"], "pw\n",
         "iterations must be within 4096..16384"),
        (["delete", "nobody"], None, "no user 'nobody'"),
        (["delete", "nobody", "--mechanism", "PLAIN"], None, "unknown mechanism 'PLAIN'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_on_stderr(
    tmp_path: Path, redis_server: Any, keyspace: str, args: list[str], password: str | None, message: str
) -> None:
    conf = config_file(tmp_path, redis_url=redis_server.url, keyspace=keyspace)
    done = users(*args, "--config", conf, password=password)
    assert done.exit_code != 0
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert stored(redis_server.url, keyspace, "bob") is None


def test_the_first_user_before_the_broker_and_the_next_beside_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    conf = config_file(tmp_path, data_dir=str(data_dir))
    # No broker yet: the command starts the data folder's redis-server and stops it again.
    done = users("set", "admin", "--mechanism", "SCRAM-SHA-512", "--password-stdin", "--config", conf,
                 password="first\n")  # fmt: skip
    assert done.exit_code == 0, done.output
    with EmbeddedRedis(data_dir / "redis") as again:  # the folder is free: the command's server is gone
        assert stored(again.url, "schooner", "admin") is not None  # and its data stayed (AOF)
    port = free_port()
    broker = subprocess.Popen(
        [sys.executable, "-m", "schooner.ops.entry", "broker", "--data-dir", str(data_dir),
         "--listener", f"SASL_PLAINTEXT://127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    try:
        wait_for_port(port, broker)
        bootstrap = f"127.0.0.1:{port}"
        conf_admin = confluent_conf("SCRAM-SHA-512", "admin", "first")
        assert confluent_produce(bootstrap, "cli", [Rec(b"k", b"admin")], **conf_admin)[0].error() is None
        # With the broker running, the command uses its redis-server (the data folder is locked).
        done = users("set", "bob", "--mechanism", "SCRAM-SHA-256", "--password-stdin", "--config", conf,
                     password="second\n")  # fmt: skip
        assert done.exit_code == 0, done.output
        conf_bob = confluent_conf("SCRAM-SHA-256", "bob", "second")
        assert confluent_produce(bootstrap, "cli", [Rec(b"k", b"bob")], **conf_bob)[0].error() is None
        listed = users("list", "--config", conf)
        assert [line.split()[0] for line in listed.output.splitlines()[1:]] == ["admin", "bob"]
    finally:
        broker.terminate()
        broker.wait(30)

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schooner import config


def test_defaults_file_env_and_flags_in_that_order(tmp_path: Path) -> None:
    path = tmp_path / "schooner.toml"
    path.write_text(
        'port = 9500\nkeyspace = "fromfile"\ndefault_partitions = 4\n'
        '[topic_defaults]\n"retention.ms" = 1000\n'
    )
    s = config.load(path, env={"SCHOONER_KEYSPACE": "fromenv", "SCHOONER_TOPIC_RETENTION_BYTES": "77"})
    assert (s.port, s.keyspace, s.default_partitions) == (9500, "fromenv", 4)
    assert s.topic_defaults == {"retention.ms": "1000", "retention.bytes": "77"}
    s = config.load(path, env={"SCHOONER_PORT": "9600"}, overrides={"port": 9700, "host": None})
    assert s.port == 9700 and s.host == "127.0.0.1"
    assert config.load(env={"SCHOONER_AUTO_CREATE_TOPICS": "false"}).auto_create_topics is False


def test_unknown_setting_in_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("prot = 1\n")
    with pytest.raises(ValueError, match="prot"):
        config.load(path, env={})


def test_advertised_address() -> None:
    assert config.Settings(host="0.0.0.0", port=1).advertised_host_port == ("127.0.0.1", 1)
    assert config.Settings(advertise="kafka.local:19092").advertised_host_port == ("kafka.local", 19092)


def test_producer_id_expiration_from_default_file_env_and_flag(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from schooner.ops import cli

    assert config.load(env={}).producer_id_expiration_ms == 86_400_000  # Kafka's one day
    path = tmp_path / "schooner.toml"
    path.write_text("producer_id_expiration_ms = 3600000\n")
    assert config.load(path, env={}).producer_id_expiration_ms == 3_600_000
    env = {"SCHOONER_PRODUCER_ID_EXPIRATION_MS": "60000"}
    assert config.load(path, env=env).producer_id_expiration_ms == 60_000
    flags = {"producer_id_expiration_ms": 1000}
    assert config.load(path, env=env, overrides=flags).producer_id_expiration_ms == 1000
    usage = CliRunner().invoke(cli.main, ["broker", "--help"]).output
    assert "--producer-id-expiration-ms" in usage


def test_load_records_the_settings_the_operator_gave(tmp_path: Path) -> None:
    file = tmp_path / "schooner.toml"
    file.write_text("default_partitions = 1\n")
    settings = config.load(file, env={"SCHOONER_PORT": "9092"}, overrides={"host": "0.0.0.0", "rack": None})
    assert settings.explicit == {"default_partitions", "port", "host"}  # even at their default values
    assert config.Settings().explicit == frozenset()


@pytest.mark.parametrize(
    "value, on",
    [(None, True), ("1", True), ("yes", True), ("", True), ("0", False), ("false", False), (" OFF ", False)],
)
def test_the_compiled_switch(value: str | None, on: bool) -> None:
    env = {} if value is None else {config.COMPILED_ENV: value}
    assert config.compiled_enabled(env) is on


SWITCHED_OFF = """
from schooner.protocol import batch_c
from schooner.broker.partitions import fetch_codec
from schooner.storage.log import append
from schooner.storage.redis import embedded, resp
print(batch_c.encode_plain, batch_c.plain_records, batch_c.crc32c, fetch_codec.encode_plain,
      resp.pack_bytes, embedded.stream_module_path(), append._USE_MODULE)
"""


def test_the_switch_turns_every_compiled_fast_path_off() -> None:
    """SCHOONER_COMPILED=0: the modules are None as where they were not built, the embedded server loads
    no stream module, and log_append.lua is told not to call it (make test runs the fast paths' tests so)."""
    env = {**os.environ, config.COMPILED_ENV: "0"}
    run = subprocess.run(
        [sys.executable, "-c", SWITCHED_OFF], env=env, capture_output=True, text=True, check=True
    )
    assert run.stdout.split() == ["None"] * 6 + ["b'0'"]

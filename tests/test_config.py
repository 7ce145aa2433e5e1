from __future__ import annotations

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

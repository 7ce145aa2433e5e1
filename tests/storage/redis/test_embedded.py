"""The embedded redis-server listens on 127.0.0.1 only and requires a password that it keeps, private, in
its data folder; the URL it writes there carries it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import redis

from schooner.storage.redis.embedded import EmbeddedRedis


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_password_is_made_kept_private_and_required(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path, persistent=False) as server:
        assert server.password and _mode(tmp_path / "password") == 0o600
        assert (tmp_path / "password").read_text().strip() == server.password
        url = (tmp_path / "url").read_text().strip()
        assert url == server.url and f"default:{server.password}@127.0.0.1:{server.port}" in url
        assert _mode(tmp_path / "url") == 0o600
        with redis.Redis(port=server.port) as anonymous, pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        with redis.Redis.from_url(url) as client:
            assert client.ping()
            assert client.config_get("bind") == {"bind": "127.0.0.1"}
        # Not on the command line, which any user of the machine can read.
        assert server.password.encode() not in Path(f"/proc/{server.pid}/cmdline").read_bytes()
        password = server.password
    with EmbeddedRedis(tmp_path, persistent=False) as again:  # the data folder keeps its password
        assert again.password == password


def test_a_data_folder_from_before_passwords_gets_one(tmp_path: Path) -> None:
    port = EmbeddedRedis(tmp_path, persistent=False).port
    (tmp_path / "url").write_text(f"redis://127.0.0.1:{port}/0\n")  # as written before, readable by all
    (tmp_path / "url").chmod(0o644)
    with EmbeddedRedis(tmp_path, port, persistent=False) as server:
        assert server.password and (tmp_path / "password").exists()
        assert (tmp_path / "url").read_text().strip() == server.url and _mode(tmp_path / "url") == 0o600
        with redis.Redis(port=port) as anonymous, pytest.raises(redis.AuthenticationError):
            anonymous.ping()


def test_no_password_when_asked_for_none(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path, persistent=False, password=False) as server:
        assert server.password is None and not (tmp_path / "password").exists()
        with redis.Redis(port=server.port) as client:
            assert client.ping()

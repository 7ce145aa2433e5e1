"""Redis URLs as users give them: a unix socket (`unix:///path`), the `cluster` option taken off, and
passwords kept out of what is logged."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import quote

import pytest

from schooner.storage.redis import client
from schooner.storage.redis.embedded import EmbeddedRedis


@pytest.mark.parametrize(
    "url, handed, mode",
    [
        ("unix:///run/redis.sock?password=pw&cluster=no", "unix:///run/redis.sock?password=pw", "no"),
        ("unix:///run/redis.sock", "unix:///run/redis.sock", "auto"),
        ("redis://u:p@h:1/0?cluster=yes", "redis://u:p@h:1/0", "yes"),
        ("rediss://h:1?ssl_cert_reqs=none&cluster=auto", "rediss://h:1?ssl_cert_reqs=none", "auto"),
    ],
)
def test_the_cluster_option_is_taken_off_and_the_rest_kept(url: str, handed: str, mode: str) -> None:
    assert client._split_mode(url) == (handed, mode)


@pytest.mark.parametrize(
    "url, shown",
    [
        ("redis://u:secret@h:1/0", "redis://u:***@h:1/0"),
        ("redis://:secret@h:1/0", "redis://:***@h:1/0"),
        ("unix:///run/redis.sock?password=secret&db=0", "unix:///run/redis.sock?password=***&db=0"),
        ("unix://u:secret@/run/redis.sock", "unix://u:***@/run/redis.sock"),
        ("redis://h:1/0", "redis://h:1/0"),
    ],
)
def test_redacted_hides_the_password_wherever_the_url_carries_it(url: str, shown: str) -> None:
    assert client.redacted(url) == shown
    assert "secret" not in client.redacted(url)


def test_a_unix_socket_url_reaches_redis(tmp_path: Path) -> None:
    socket_path = tmp_path / "r.sock"
    extra = ["--unixsocket", str(socket_path), "--unixsocketperm", "700"]
    with EmbeddedRedis(tmp_path / "redis", persistent=False, extra_args=extra) as server:
        assert server.password is not None
        url = f"unix://{socket_path}?password={quote(server.password)}"

        async def ping() -> bool:
            redis = client.connect(url)
            try:
                return bool(await redis.ping())
            finally:
                await redis.aclose()

        assert asyncio.run(ping())
        with client.connect_sync(url) as blocking:
            assert blocking.ping()

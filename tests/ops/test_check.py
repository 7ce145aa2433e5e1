"""`schooner broker --check`: one line per check, exit 1 on any fail, and no broker started. Against real
redis-servers (the embedded default, one that may evict, one that is not there, a limited ACL user), and
the rules alone on made-up facts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from schooner import config
from schooner.ops import check
from schooner.storage.redis.acl import acl_setuser
from schooner.storage.redis.embedded import EmbeddedRedis, free_port
from schooner.storage.redis.health import AclFacts, ClusterFacts, NodeFacts, RedisFacts
from schooner.storage.redis.server_info import Memory
from tests.conftest import with_user


def _check(*flags: str, **env: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "schooner.ops.entry", "broker", "--check", *flags],
        capture_output=True, text=True, timeout=120, env={**os.environ, **env},
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout.splitlines()


def _verdicts(lines: list[str]) -> dict[str, str]:
    """check name -> status, from lines `status name: message`."""
    found = {}
    for line in lines:
        status, _, rest = line.partition(" ")
        if status in ("ok", "warn", "fail", "skip"):
            found[rest.strip().partition(":")[0]] = status
    return found


def test_the_embedded_default_is_ok(tmp_path: Path) -> None:
    port = free_port()
    code, lines = _check("--data-dir", str(tmp_path), "--port", str(port))
    assert code == 0, lines
    verdicts = _verdicts(lines)
    assert set(verdicts.values()) == {"ok"}, lines
    expected = {"config", "listeners", "redis reachable", "redis version", "redis persistence",
                "redis maxmemory-policy", "redis maxmemory", "redis cluster", "redis acl",
                "redis stream module", "cold store"}  # fmt: skip
    assert expected <= set(verdicts)
    assert any("AOF on, appendfsync everysec" in line for line in lines)
    assert any(line.startswith("ok   redis stream module: loaded") for line in lines), lines
    # The embedded default's cold store, in the data folder, is probed and left as it was.
    cold = tmp_path.resolve() / "cold"
    assert any(f"cold store: {cold}: writes, reads and deletes work" in line for line in lines), lines
    assert not cold.exists() or list(cold.iterdir()) == []
    # No broker was started, and the embedded redis-server was stopped again.
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert not (tmp_path / "redis" / "redis.pid").exists() or not _alive(tmp_path / "redis" / "redis.pid")


def test_a_cold_store_that_cannot_be_written_fails(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_bytes(b"x")
    code, lines = _check("--data-dir", str(tmp_path / "data"), "--port", str(free_port()),
                         "--cold-store-url", str(blocker))  # fmt: skip
    assert code == 1 and _verdicts(lines)["cold store"] == "fail", lines
    assert any("cannot write a probe object" in line for line in lines), lines


def _alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text().strip()), 0)
    except (ProcessLookupError, ValueError, FileNotFoundError):
        return False
    return True


@pytest.fixture
def evicting_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(
        tmp_path / "evicting", persistent=True, extra_args=["--maxmemory-policy", "allkeys-lru"]
    )
    server.start()
    yield server
    server.stop()


def test_an_evicting_policy_warns_and_passes_when_allowed(evicting_redis: EmbeddedRedis) -> None:
    code, lines = _check("--redis-url", evicting_redis.url, SCHOONER_ALLOW_EVICTING_REDIS="true")
    assert code == 0, lines
    assert _verdicts(lines)["redis maxmemory-policy"] == "warn"
    assert any("allkeys-lru" in line and "can evict stream keys" in line for line in lines)


def test_an_evicting_policy_fails_when_the_broker_would_refuse_it(evicting_redis: EmbeddedRedis) -> None:
    code, lines = _check("--redis-url", evicting_redis.url)
    assert code == 1
    verdicts = _verdicts(lines)
    assert verdicts["redis maxmemory-policy"] == "warn" and verdicts["broker start"] == "fail"


def test_an_unreachable_redis_fails() -> None:
    code, lines = _check("--redis-url", f"redis://127.0.0.1:{free_port()}/0")
    assert code == 1
    assert _verdicts(lines)["redis reachable"] == "fail"


def test_a_wrong_password_fails(redis_server: Any) -> None:
    code, lines = _check("--redis-url", with_user(redis_server.url, "default", "wrong"))
    assert code == 1
    assert _verdicts(lines)["redis auth"] == "fail"
    assert "wrong" not in "\n".join(lines)  # the password is never printed


def test_a_bad_config_file_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("no_such_setting = 1\n")
    code, lines = _check("--config", str(bad))
    assert code == 1
    assert lines == [f"fail config: {bad}: unknown setting 'no_such_setting' in {bad}"]


def test_a_bad_topic_default_fails(tmp_path: Path) -> None:
    code, lines = _check("--data-dir", str(tmp_path), SCHOONER_TOPIC_RETENTION_MS="never")
    assert code == 1
    assert any(line.startswith("fail topic defaults: retention.ms = 'never'") for line in lines), lines


def test_a_tls_listener_without_a_certificate_fails(tmp_path: Path) -> None:
    code, lines = _check("--listener", "SSL://127.0.0.1:0", "--data-dir", str(tmp_path))
    assert code == 1
    assert any(line.startswith("fail tls:") and "ssl_certfile" in line for line in lines)


def test_a_limited_user_is_checked_with_acl_dryrun(redis_server: Any, keyspace: str) -> None:
    """A user that may run ACL DRYRUN (and so be checked) but lacks one command Schooner sends."""
    user, password = f"check-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    with redis.Redis.from_url(redis_server.url) as admin:
        rules = [
            *acl_setuser(user, password, keyspace),
            "+acl|whoami",
            "+acl|dryrun",
            "+config|get",
            "-xclaim",
        ]
        admin.execute_command(*rules)
    code, lines = _check("--redis-url", with_user(redis_server.url, user, password), "--keyspace", keyspace)
    assert code == 1
    (acl,) = [line for line in lines if "redis acl" in line]
    assert acl.startswith("fail") and "xclaim" in acl and user in acl


def test_a_user_that_may_not_dryrun_is_not_checked(redis_server: Any, keyspace: str) -> None:
    user, password = f"check-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    with redis.Redis.from_url(redis_server.url) as admin:
        admin.execute_command(*acl_setuser(user, password, keyspace), "+acl|whoami")
    code, lines = _check("--redis-url", with_user(redis_server.url, user, password), "--keyspace", keyspace)
    (acl,) = [line for line in lines if "redis acl" in line]
    assert acl.startswith("skip redis acl: not checked: ACL DRYRUN is refused"), acl


def test_a_user_limited_to_schooner_commands_is_not_checked(acl_redis_url: str, keyspace: str) -> None:
    code, lines = _check("--redis-url", acl_redis_url, "--keyspace", keyspace)
    verdicts = _verdicts(lines)
    assert verdicts["redis acl"] == "skip" and verdicts["redis reachable"] == "ok"
    assert code == (1 if "fail" in verdicts.values() else 0)


def test_a_cluster_is_checked_on_every_primary(cluster_factory: Any) -> None:
    cluster = cluster_factory(primaries=3, replicas=0)
    code, lines = _check("--redis-url", cluster.url)
    assert code == 0, lines
    assert any(line == "ok   redis cluster: 3 primaries serve all 16384 slots" for line in lines), lines
    # Each primary's persistence is judged, and each says where it is (AOF is off on these).
    warned = [line for line in lines if line.startswith("warn redis persistence")]
    assert len(warned) == 3 and len({line.split(" at ")[1].split(" ")[0] for line in warned}) == 3


# -- the rules alone --------------------------------------------------------------------------------


def _node(**changes: Any) -> NodeFacts:
    values: dict[str, Any] = {
        "address": "h:1", "version": "7.2.4", "memory": Memory(10, 0, "noeviction"), "aof_enabled": True,
        "appendfsync": "everysec", "save": "", "rdb_saves": 0,
    }  # fmt: skip
    values.update(changes)
    return NodeFacts(**values)


def _facts(*nodes: NodeFacts, **changes: Any) -> RedisFacts:
    return RedisFacts("redis://h:1", nodes=list(nodes) or [_node()], acl=AclFacts("default"), **changes)


def _statuses(facts: RedisFacts, **settings: Any) -> dict[str, str]:
    return {c.name: c.status for c in check.redis_checks(facts, config.Settings(**settings))}


def test_rules_on_versions() -> None:
    assert _statuses(_facts(_node(version="6.2.14")))["redis version"] == "fail"
    assert _statuses(_facts(_node(version="7.0.15")))["redis version"] == "ok"
    assert _statuses(_facts(_node(version="7.0.15")), acks_all_fsync=True)["redis version"] == "warn"


@pytest.mark.parametrize(
    ("changes", "status"),
    [
        ({"appendfsync": "always"}, "ok"),
        ({"appendfsync": None}, "ok"),  # CONFIG GET refused: AOF is on, which is what matters most
        ({"appendfsync": "no"}, "warn"),
        ({"aof_enabled": False, "save": "3600 1"}, "warn"),
        ({"aof_enabled": False, "save": None, "rdb_saves": 3}, "warn"),
        ({"aof_enabled": False, "save": ""}, "warn"),
    ],
)
def test_rules_on_persistence(changes: dict[str, Any], status: str) -> None:
    assert _statuses(_facts(_node(**changes)))["redis persistence"] == status


@pytest.mark.parametrize(
    ("policy", "status", "start"),
    [
        ("noeviction", "ok", None),
        ("allkeys-lru", "warn", "fail"),
        ("allkeys-random", "warn", "fail"),
        ("volatile-lru", "ok", "fail"),  # stream keys have no TTL; the broker still refuses to start
    ],
)
def test_rules_on_memory_policy(policy: str, status: str, start: str | None) -> None:
    statuses = _statuses(_facts(_node(memory=Memory(10, 0, policy))))
    assert statuses["redis maxmemory-policy"] == status
    assert statuses.get("broker start") == start
    allowed = _statuses(_facts(_node(memory=Memory(10, 0, policy))), allow_evicting_redis=True)
    assert "broker start" not in allowed


def test_rules_on_the_stream_module() -> None:
    def line(**changes: Any) -> str:
        (found,) = [c.line() for c in check.redis_checks(_facts(_node(**changes)), config.Settings())
                    if c.name == "redis stream module"]  # fmt: skip
        return found

    assert line(stream_module=True).startswith("ok   redis stream module: loaded")
    assert line(stream_module=False).startswith("ok   redis stream module: not loaded at h:1")
    assert line(stream_module=None).startswith("skip redis stream module")


def test_rules_on_clusters_acls_and_failures() -> None:
    whole = ClusterFacts("ok", 16384, 16384, 3)
    assert _statuses(_facts(cluster=whole))["redis cluster"] == "ok"
    assert _statuses(_facts(cluster=ClusterFacts("fail", 16384, 10000, 2)))["redis cluster"] == "fail"
    denied = RedisFacts("redis://h:1", nodes=[_node()], acl=AclFacts("u", ["xadd: no permission"]))
    assert _statuses(denied)["redis acl"] == "fail"
    assert _statuses(RedisFacts("redis://h:1", error="refused"))["redis reachable"] == "fail"
    assert _statuses(RedisFacts("redis://h:1", error="WRONGPASS", auth_failed=True)) == {"redis auth": "fail"}

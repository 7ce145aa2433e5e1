"""TLS settings the broker cannot serve with stop its start with a sentence saying what to change (no
traceback); the `schooner broker` command under uvloop serves TLS and maps principals as the tests' brokers
do."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from schooner.broker.server import StartupRefused
from schooner.storage.redis.embedded import free_port
from tests.certs import Certs
from tests.clients import SAMPLE, confluent_consume, confluent_produce
from tests.wire import is_closed

from .tls_helpers import bootstrap, confluent_tls, refusal, tls_broker


def settings_cases(certs: Certs, tmp: Path) -> dict[str, tuple[dict[str, Any], str]]:
    not_pem = tmp / "not-a-certificate.pem"
    not_pem.write_text("hello\n")
    return {
        "no certificate": ({"ssl_certfile": None, "ssl_keyfile": None}, "needs the broker's certificate"),
        "missing file": ({"ssl_certfile": str(tmp / "nowhere.pem")}, "nowhere.pem': no such file"),
        "missing key": ({"ssl_keyfile": str(tmp / "nokey.pem")}, "nokey.pem': no such file"),
        "not a certificate": ({"ssl_certfile": str(not_pem)}, "cannot load the certificate"),
        "key of another certificate": ({"ssl_keyfile": str(certs.alice.key)}, "cannot load the certificate"),
        "encrypted key, no password": (
            {"ssl_certfile": str(certs.alice.cert), "ssl_keyfile": str(certs.alice_encrypted_key)},
            "ssl_keyfile is encrypted: set ssl_keyfile_password",
        ),
        "wrong password": (
            {
                "ssl_certfile": str(certs.alice.cert),
                "ssl_keyfile": str(certs.alice_encrypted_key),
                "ssl_keyfile_password": "not it",
            },
            "is ssl_keyfile_password right?",
        ),
        "bad client auth": ({"ssl_client_auth": "sometimes"}, "use one of none, requested, required"),
        "client auth without a CA": ({"ssl_client_auth": "required", "ssl_cafile": None}, "set ssl_cafile"),
        "CA file not a certificate": ({"ssl_cafile": str(not_pem)}, "holds no readable CA certificate"),
        "bad mapping rule": ({"ssl_principal_mapping_rules": "RULE:^CN=(.*$/$1/"}, "bad pattern"),
        "no handshake time": ({"ssl_handshake_timeout_ms": 0}, "ssl_handshake_timeout_ms must be positive"),
    }


CASES = [
    "no certificate", "missing file", "missing key", "not a certificate", "key of another certificate",
    "encrypted key, no password", "wrong password", "bad client auth", "client auth without a CA",
    "CA file not a certificate", "bad mapping rule", "no handshake time",
]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_settings_that_cannot_serve_tls_stop_the_start(
    broker_factory: Any, certs: Certs, tmp_path: Path, case: str
) -> None:
    overrides, why = settings_cases(certs, tmp_path)[case]
    with pytest.raises(StartupRefused, match="") as refused:
        tls_broker(broker_factory, certs, **overrides)
    assert why in str(refused.value)


def test_an_encrypted_broker_key_with_its_password(broker_factory: Any, certs: Certs, tmp_path: Path) -> None:
    key = tmp_path / "broker_encrypted.key"
    subprocess.run(
        ["openssl", "pkey", "-in", str(certs.broker.key), "-aes256", "-passout", "pass:broker-pass",
         "-out", str(key)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    b = tls_broker(broker_factory, certs, ssl_keyfile=str(key), ssl_keyfile_password="broker-pass")
    conf = confluent_tls(certs)
    confluent_produce(bootstrap(b), "broker-key", SAMPLE[:1], **conf)
    assert len(confluent_consume(bootstrap(b), "broker-key", 1, **conf)) == 1


def _cli(redis_url: str, keyspace: str, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "schooner.ops.entry", "broker", "--redis-url", redis_url,
               "--keyspace", keyspace, *args]  # fmt: skip
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env}
    )


def test_the_command_says_what_is_wrong(redis_server: Any, keyspace: str) -> None:
    proc = _cli(redis_server.url, keyspace, "--listener", "SSL://127.0.0.1:0", env={})
    _, err = proc.communicate(timeout=60)
    text = err.decode()
    assert proc.returncode != 0
    assert "Error: listener SSL://127.0.0.1:0 needs the broker's certificate: set ssl_certfile" in text
    assert "Traceback" not in text


def test_the_command_serves_tls_under_uvloop(redis_server: Any, keyspace: str, certs: Certs) -> None:
    port = free_port()
    env = {
        "SCHOONER_SSL_CERTFILE": str(certs.broker.cert),
        "SCHOONER_SSL_KEYFILE": str(certs.broker.key),
        "SCHOONER_SSL_CAFILE": str(certs.ca),
        "SCHOONER_SSL_CLIENT_AUTH": "required",
        # Only alice's subject maps: bob is refused after his certificate passed, so the mapping ran.
        "SCHOONER_SSL_PRINCIPAL_MAPPING_RULES": "RULE:^CN=(alice),.*$/$1/",
        "SCHOONER_SSL_HANDSHAKE_TIMEOUT_MS": "2000",
    }
    proc = _cli(redis_server.url, keyspace, "--listener", f"SSL://127.0.0.1:{port}", env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the broker did not start"
                time.sleep(0.1)
        silent = socket.create_connection(("127.0.0.1", port), timeout=10)
        where = f"127.0.0.1:{port}"
        alice = confluent_tls(certs, certs.alice)
        confluent_produce(where, "cli-tls", SAMPLE, **alice)
        assert len(confluent_consume(where, "cli-tls", len(SAMPLE), **alice)) == len(SAMPLE)
        assert refusal(where, confluent_tls(certs, certs.bob))[0].name() == "_TRANSPORT"
        assert refusal(where, confluent_tls(certs, certs.mallory))[0].name() == "_TRANSPORT"
        assert is_closed(silent)  # the 2 s handshake timeout, under uvloop
        silent.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert "no ssl_principal_mapping_rules rule applies to 'CN=bob,OU=clients,O=Schooner'" in err.decode()

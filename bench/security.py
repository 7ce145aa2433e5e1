"""What security costs: produce and fetch over SASL_SSL (SCRAM-SHA-512 on TLS) divided by plaintext.

One broker process serves two listeners on one redis-server: PLAINTEXT and SASL_SSL. Each run produces N
100-byte records to a new one-partition topic through each listener with confluent-kafka (acks=1, the
suite's producer settings), then reads them back with kcat (librdkafka, start to exit) through the same
listener; the two listeners take turns at going first. The ratios are SASL_SSL / PLAINTEXT within a run,
and the figures are medians of the runs. TLS costs the broker's one core the encryption of every byte
and the clients theirs; SCRAM is paid once per connection.
`python -m bench.security` runs it alone; the suite calls run() (`--skip security` leaves it out).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from schooner.security.scram import make_credential
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client
from schooner.storage.redis.calls import run_sync
from schooner.storage.redis.embedded import EmbeddedRedis, free_port
from schooner.storage.security.users import User, put_user
from tests.certs import make_certs

from . import fetch, produce
from .servers import broker_command, stop_process, wait_for_port

MESSAGES = 200_000
RUNS = 3
KEYSPACE = "bench-security"
USER, PASSWORD, MECHANISM = "bench", "bench-password", "SCRAM-SHA-512"
SETUPS = ("PLAINTEXT", "SASL_SSL")


def _client_settings(certs_ca: Path) -> dict[str, str]:
    """librdkafka settings (confluent-kafka and kcat alike) for the SASL_SSL listener."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": MECHANISM,
        "sasl.username": USER,
        "sasl.password": PASSWORD,
        "ssl.ca.location": str(certs_ca),
    }


def _start(stack: ExitStack) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Redis, the user, and the broker with both listeners: each setup's bootstrap and client settings."""
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="schooner-security-")))
    certs = make_certs(folder / "certs")
    server = EmbeddedRedis(folder / "redis", persistent=False)
    server.start()
    stack.callback(server.stop)
    redis = client.connect_sync(server.url)
    try:
        credential = make_credential(MECHANISM, PASSWORD)
        run_sync(redis, put_user(Keyspace(KEYSPACE), User(USER, None, {MECHANISM: credential})))
    finally:
        redis.close()
    ports = {"PLAINTEXT": free_port(), "SASL_SSL": free_port()}
    env = {
        **os.environ,
        "SCHOONER_SSL_CERTFILE": str(certs.broker.cert),
        "SCHOONER_SSL_KEYFILE": str(certs.broker.key),
    }
    args = [*broker_command(), "broker", "--redis-url", server.url, "--keyspace", KEYSPACE,
            "--log-level", "WARNING"]  # fmt: skip
    for protocol, port in ports.items():
        args += ["--listener", f"{protocol}://127.0.0.1:{port}"]
    log = stack.enter_context((folder / "broker.log").open("wb"))
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
    stack.callback(stop_process, process)
    for port in ports.values():
        wait_for_port(port, process, timeout=30)
    bootstraps = {protocol: f"127.0.0.1:{port}" for protocol, port in ports.items()}
    return bootstraps, {"PLAINTEXT": {}, "SASL_SSL": _client_settings(certs.ca)}


def _produce(bootstrap: str, settings: dict[str, str], topic: str, messages: int) -> float:
    producer = produce.make_producer(bootstrap, **settings)
    failed = True
    try:
        produce.warm_up(producer, topic)  # connected and authenticated before the clock starts
        done = produce.produce_topic(producer, topic, messages, produce.bench_value())
        failed = False
    finally:
        produce.close_producer(producer, failed)
    return done.msgs_per_s


def _fetch(bootstrap: str, settings: dict[str, str], topic: str, messages: int) -> float:
    extra = [arg for key, value in settings.items() for arg in ("-X", f"{key}={value}")]
    return fetch.kcat_consume(bootstrap, topic, messages, extra=extra).msgs_per_s


def run(messages: int = MESSAGES, runs: int = RUNS) -> dict[str, Any]:
    rates: dict[str, dict[str, list[float]]] = {k: {s: [] for s in SETUPS} for k in ("produce", "fetch")}
    with ExitStack() as stack:
        bootstraps, settings = _start(stack)
        for run_number in range(runs):
            order = SETUPS if run_number % 2 == 0 else SETUPS[::-1]
            for setup in order:
                topic = f"security-{setup.lower()}-{run_number}-{time.monotonic_ns()}"
                rates["produce"][setup].append(_produce(bootstraps[setup], settings[setup], topic, messages))
                rates["fetch"][setup].append(_fetch(bootstraps[setup], settings[setup], topic, messages))
    out: dict[str, Any] = {"messages": messages, "runs": runs, "mechanism": MECHANISM, "rates": rates}
    for kind in ("produce", "fetch"):
        plain, secure = rates[kind]["PLAINTEXT"], rates[kind]["SASL_SSL"]
        out[f"{kind}_plaintext_msgs_per_s"] = round(statistics.median(plain))
        out[f"{kind}_sasl_ssl_msgs_per_s"] = round(statistics.median(secure))
        out[f"{kind}_ratio"] = round(statistics.median(s / p for s, p in zip(secure, plain, strict=True)), 3)
    return out


def main() -> int:
    out = run()
    for kind in ("produce", "fetch"):
        print(
            f"{kind}: SASL_SSL {out[f'{kind}_sasl_ssl_msgs_per_s']:,} msgs/s, "
            f"PLAINTEXT {out[f'{kind}_plaintext_msgs_per_s']:,} msgs/s, ratio {out[f'{kind}_ratio']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A consumer process for the multi-process tests: `python -m tests.mq.worker URL KEYSPACE TOPIC MEMBER ...`.

Each handled message's value is counted in the Redis hash HANDLED (HINCRBY), and per member in
HANDLED:<member>. With --stall-after N the member, after N messages, marks STALLED:<member> and hangs
inside its handler (holding a fetched batch), so a test can SIGKILL it at a known point.
"""

from __future__ import annotations

import argparse
import signal
import time
from typing import Any

from prometheus_client import CollectorRegistry

from schooner.mq import Consumer, ConsumerConfig, Message
from schooner.storage.keys import Keyspace
from schooner.storage.redis import client


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("url", "keyspace", "topic", "member"):
        parser.add_argument(name)
    parser.add_argument("--lease-ms", type=int, default=1500)
    parser.add_argument("--sleep-ms", type=float, default=0.0)
    parser.add_argument("--stall-after", type=int, default=0)
    args = parser.parse_args()
    ks = Keyspace(args.keyspace)
    redis = client.connect_sync(args.url)
    handled = [0]

    def handler(message: Message) -> None:
        if args.stall_after and handled[0] >= args.stall_after:
            redis.set(f"{ks.prefix}:STALLED:{args.member}", 1)
            time.sleep(3600)
        if args.sleep_ms:
            time.sleep(args.sleep_ms / 1000)
        pipe: Any = redis.pipeline(transaction=False)
        pipe.hincrby(f"{ks.prefix}:HANDLED", message.value or b"", 1)
        pipe.hincrby(f"{ks.prefix}:HANDLED:{args.member}", message.value or b"", 1)
        pipe.execute()
        handled[0] += 1

    config = ConsumerConfig(start="earliest", lease_ms=args.lease_ms, poll_ms=10, batch_size=50)
    consumer = Consumer(
        args.url, args.topic, "workers", handler, keyspace=ks, config=config,
        registry=CollectorRegistry(), member_id=args.member,
    )  # fmt: skip
    signal.signal(signal.SIGTERM, lambda *_: consumer.stop(0))
    consumer.run()


if __name__ == "__main__":
    main()

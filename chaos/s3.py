"""An S3-compatible server for the cold tier: moto's server, in a process of its own on a free port of
the loopback. A chaos deployment runs one as its cold store; the `s3_server` fixture of
tests/conftest.py starts one per test session (tests/s3.py re-exports this module)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass

import boto3

from schooner.storage.cold.location import ColdLocation
from schooner.storage.redis.embedded import free_port


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen[bytes]

    def bucket(self, name: str | None = None) -> str:
        """A new bucket on the server (named at random unless given)."""
        name = name or f"cold-{uuid.uuid4().hex[:12]}"
        s3 = boto3.client(
            "s3", endpoint_url=self.endpoint, region_name="us-east-1",
            aws_access_key_id="test", aws_secret_access_key="test",
        )  # fmt: skip
        s3.create_bucket(Bucket=name)
        return name

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1])

    def url(self, bucket: str) -> str:
        return f"s3://{bucket}/tiered"

    def location(self, bucket: str, endpoint: str | None = None) -> ColdLocation:
        return ColdLocation.from_url(
            f"s3://{bucket}/tiered", endpoint=endpoint or self.endpoint, region="us-east-1",
            access_key_id="test", secret_access_key="test",
        )  # fmt: skip


def start_s3_server(port: int | None = None) -> S3Server:
    port = port or free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return S3Server(f"http://127.0.0.1:{port}", process)
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the S3 test server did not start") from None
            time.sleep(0.1)


def stop_s3_server(server: S3Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()

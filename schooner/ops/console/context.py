"""What the console runs with: its settings, the logged-in users, the two data sides and the sampler."""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field

from starlette.requests import Request

from ..client_options import ClientSettings
from .kafka_data import KafkaSide
from .redis_data import RedisSide
from .registry_data import RegistrySide, default_url

SESSION_COOKIE = "schooner_console"
MAX_SESSIONS = 1000  # past this many logins the oldest session ends (each holds a Kafka client)


@dataclass(frozen=True)
class ConsoleSettings:
    client: ClientSettings
    redis_url: str | None = None  # None: the Redis-side views say so and show nothing
    keyspace: str = "schooner"
    read_only: bool = False
    sample_interval_s: float = 5.0
    history: int = 360  # samples kept per chart (30 minutes at 5 s)
    schema_registry_url: str | None = None  # None: http://<the bootstrap host>:8081

    @property
    def registry_url(self) -> str:
        return (self.schema_registry_url or default_url(self.client.bootstrap_servers)).rstrip("/")

    @property
    def needs_login(self) -> bool:
        """SASL without a user name on the command line: each user logs in, and runs as themselves."""
        return self.client.uses_sasl and not self.client.sasl_username


@dataclass
class Console:
    """The application's state (Starlette's app.state.console)."""

    settings: ConsoleSettings
    redis: RedisSide | None
    _sides: dict[str, KafkaSide] = field(default_factory=dict)  # session token -> that user's clients
    _shared: KafkaSide | None = None  # the command line's identity, when it needs no login
    _registries: dict[KafkaSide, RegistrySide] = field(default_factory=dict)  # per identity, as its side
    _lock: threading.Lock = field(default_factory=threading.Lock)
    last_login: str | None = None  # token of the latest login: the sampler's identity under logins

    def shared(self) -> KafkaSide:
        with self._lock:
            if self._shared is None:
                self._shared = KafkaSide(self.settings.client)
            return self._shared

    def login(self, side: KafkaSide) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._sides[token] = side
            self.last_login = token
            ended = [self._sides.pop(t) for t in list(self._sides)[: max(len(self._sides) - MAX_SESSIONS, 0)]]
        for old in ended:
            self._close_side(old)
        return token

    def logout(self, token: str) -> None:
        with self._lock:
            side = self._sides.pop(token, None)
            if self.last_login == token:
                self.last_login = next(reversed(self._sides), None)
        if side is not None:
            self._close_side(side)

    def _close_side(self, side: KafkaSide) -> None:
        with self._lock:
            registry = self._registries.pop(side, None)
        side.close()
        if registry is not None:
            registry.close()

    def registry_of(self, side: KafkaSide) -> RegistrySide:
        """The schema registry as the side's user (their SASL credentials as HTTP Basic), made when first
        asked for."""
        with self._lock:
            registry = self._registries.get(side)
            if registry is None:
                registry = RegistrySide(self.settings.registry_url, side.client)
                if side is self._shared or side in self._sides.values():  # not one logged out meanwhile
                    self._registries[side] = registry
            return registry

    def side_of(self, token: str | None) -> KafkaSide | None:
        with self._lock:
            return self._sides.get(token or "")

    def sampling_side(self) -> KafkaSide | None:
        """Whose identity the sampler reads with: the command line's, else the latest login's."""
        if not self.settings.needs_login:
            return self.shared()
        return self.side_of(self.last_login)

    def close(self) -> None:
        with self._lock:
            sides = list(self._sides.values()) + ([self._shared] if self._shared else [])
            self._sides.clear()
            self._shared = None
            registries = list(self._registries.values())
            self._registries.clear()
        for side in sides:
            side.close()
        for registry in registries:
            registry.close()
        if self.redis is not None:
            self.redis.close()


def console_of(request: Request) -> Console:
    return request.app.state.console  # type: ignore[no-any-return]


def kafka(request: Request) -> KafkaSide:
    """The Kafka side of this request's user (the login gate of app.py has made sure there is one)."""
    console = console_of(request)
    if not console.settings.needs_login:
        return console.shared()
    side = console.side_of(request.cookies.get(SESSION_COOKIE))
    if side is None:  # the gate lets no such request through; this is for safety only
        raise PermissionError("not logged in")
    return side


def registry(request: Request) -> RegistrySide:
    """The schema registry as this request's user."""
    return console_of(request).registry_of(kafka(request))

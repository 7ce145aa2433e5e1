"""Client quota windows (KIP-13 byte rates, KIP-55 user quotas, KIP-124 request_percentage): the rate a
client is measured at, the throttle time a violation earns, and which configured quota applies to a
(user, client-id). Pure: no I/O and no clock of its own; callers pass `now` in seconds.

A rate is Kafka's sampled rate: the sum of the samples kept divided by the time they span, where a span
shorter than (samples - 1) whole samples counts as that long, so a client's first burst is spread over a
full window rather than measured over the few milliseconds it took. A sample is complete after
`sample_seconds`; up to samples + 1 are kept, and one with no event for samples x sample_seconds is empty.

Throttle time is the delay X that brings the observed rate O back to the bound T over the window W:
O * W / (W + X) = T, so X = (O - T) / T * W. Kafka bounds it at one sample for request_percentage and not
for byte rates; so does this module.

Which quota applies, per quota key, is the first entity in Kafka's order that has that key:
/config/users/<user>/clients/<client-id>, /config/users/<user>/clients/<default>, /config/users/<user>,
/config/users/<default>/clients/<client-id>, /config/users/<default>/clients/<default>,
/config/users/<default>, /config/clients/<client-id>, /config/clients/<default>. The entity also says who
shares the window: a user quota is one window for all of that user's clients, a <default> one gives each
user (or client id, or pair) a window of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

PRODUCE: Final = "producer_byte_rate"  # bytes of Produce requests per second
FETCH: Final = "consumer_byte_rate"  # bytes of Fetch and ShareFetch responses per second
REQUEST: Final = "request_percentage"  # handler time, as a percentage of one core
ENFORCED: Final = (PRODUCE, FETCH, REQUEST)


class _Default:
    """The <default> name of an entity component (a singleton: DEFAULT)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default>"


DEFAULT: Final = _Default()
# A component of an entity: a name, DEFAULT, or None when the entity has no such component.
Name = str | _Default | None
EntityKey = tuple[Name, Name]  # (user, client-id)
WindowKey = tuple[str, str, str]  # (quota key, user or "", client id or ""): who shares one window


@dataclass(frozen=True, slots=True)
class WindowConfig:
    samples: int  # quota_window_num
    sample_seconds: float  # quota_window_size_seconds

    def __post_init__(self) -> None:
        if self.samples < 1 or self.sample_seconds <= 0:
            raise ValueError("a quota window needs at least one sample of a positive length")

    @property
    def span(self) -> float:
        """How long a sample counts: one with no event for this long is emptied."""
        return self.samples * self.sample_seconds


class Rate:
    """A sampled rate: a ring of up to samples + 1 samples (start, last event, sum)."""

    __slots__ = ("_config", "_starts", "_lasts", "_sums", "_current")

    def __init__(self, config: WindowConfig) -> None:
        self._config = config
        self._starts: list[float] = []
        self._lasts: list[float] = []
        self._sums: list[float] = []
        self._current = 0

    def record(self, value: float, now: float) -> None:
        cfg = self._config
        if not self._starts:
            self._starts.append(now)
            self._lasts.append(now)
            self._sums.append(0.0)
        elif now - self._starts[self._current] >= cfg.sample_seconds:
            # One more sample than the window needs: a sample that began before the window still counts.
            self._current = (self._current + 1) % (cfg.samples + 1)
            if self._current == len(self._starts):
                self._starts.append(now)
                self._lasts.append(now)
                self._sums.append(0.0)
            else:
                self._reset(self._current, now)
        i = self._current
        self._sums[i] += value
        self._lasts[i] = now

    def _reset(self, i: int, now: float) -> None:
        self._starts[i] = now
        self._lasts[i] = now
        self._sums[i] = 0.0

    def _purge(self, now: float) -> None:
        span = self._config.span
        for i, last in enumerate(self._lasts):
            if now - last >= span:
                self._reset(i, now)

    def window(self, now: float) -> float:
        """Seconds the rate is measured over: from the oldest sample kept, at least samples - 1 whole ones."""
        self._purge(now)
        cfg = self._config
        elapsed = now - min(self._starts, default=now)
        whole = int(elapsed // cfg.sample_seconds)
        if whole < cfg.samples - 1:
            elapsed += (cfg.samples - 1 - whole) * cfg.sample_seconds
        return elapsed

    def total(self, now: float) -> float:
        self._purge(now)
        return sum(self._sums)

    def measure(self, now: float) -> float:
        """The rate per second; 0 before anything is recorded."""
        total = self.total(now)
        window = self.window(now)
        return total / window if window > 0 else (0.0 if total <= 0 else float("inf"))

    def idle(self, now: float) -> bool:
        """Nothing counts any more (every sample is empty or past the span): forgetting the rate can
        only shorten the window the next value is measured over, never let more through."""
        self._purge(now)
        return not any(self._sums)


def throttle_seconds(observed: float, bound: float, window: float) -> float:
    """X with observed * window / (window + X) = bound; negative when the observed rate is within bound."""
    return (observed - bound) / bound * window


class QuotaWindow:
    """One window and the bound it is held to. Several clients may share one (see WindowKey)."""

    __slots__ = ("rate", "bound", "_max_ms", "opened")

    def __init__(
        self, config: WindowConfig, bound: float, max_throttle_ms: int | None = None, opened: float = 0.0
    ) -> None:
        self.rate = Rate(config)
        self.bound = bound
        self._max_ms = max_throttle_ms
        # When a request's lookup made it: it holds nothing until that request ends, and is not idle.
        self.opened = opened

    def record(self, value: float, now: float) -> int:
        """Records the value; the throttle time in ms that the rate now earns (0 within the bound)."""
        self.rate.record(value, now)
        observed = self.rate.measure(now)
        if observed <= self.bound:
            return 0
        if self.bound <= 0:  # a quota of 0 lets nothing through: as long a mute as the cap allows
            return self._max_ms if self._max_ms is not None else round(self.rate.window(now) * 1000)
        ms = round(throttle_seconds(observed, self.bound, self.rate.window(now)) * 1000)
        return ms if self._max_ms is None else min(ms, self._max_ms)

    def unrecord(self, value: float, now: float) -> None:
        """Takes back a value recorded at `now` (a throttled Fetch sends no records, so costs none)."""
        self.rate.record(-value, now)


def resolve(limits: Mapping[EntityKey, float], user: str, client_id: str) -> tuple[float, str, str] | None:
    """The bound that applies to (user, client-id) among the entities that set one quota key, with the
    user and client id its window is kept under ("" where the entity shares it across that component);
    None when no entity applies."""
    for entity, user_tag, client_tag in (
        ((user, client_id), user, client_id),
        ((user, DEFAULT), user, client_id),
        ((user, None), user, ""),
        ((DEFAULT, client_id), user, client_id),
        ((DEFAULT, DEFAULT), user, client_id),
        ((DEFAULT, None), user, ""),
        ((None, client_id), "", client_id),
        ((None, DEFAULT), "", client_id),
    ):
        bound = limits.get(entity)
        if bound is not None:
            return bound, user_tag, client_tag
    return None


class ClientLimits:
    """The windows one (user, client-id) is counted in, one per enforced quota key; None where no quota
    applies to it."""

    __slots__ = ("produce", "fetch", "request", "fetch_window_bytes")

    def __init__(
        self,
        produce: QuotaWindow | None,
        fetch: QuotaWindow | None,
        request: QuotaWindow | None,
        config: WindowConfig,
    ) -> None:
        self.produce = produce
        self.fetch = fetch
        self.request = request
        # Kafka caps a Fetch at what the quota allows over samples - 1 whole samples: a larger response
        # would be throttled however long the client had waited.
        self.fetch_window_bytes: int | None = None
        if fetch is not None:
            whole = max(1, config.samples - 1) * config.sample_seconds
            self.fetch_window_bytes = max(1, int(fetch.bound * whole))


class QuotaBook:
    """Every configured client quota and the windows that count against them, for one broker.

    load() replaces the configuration and keeps the windows (a changed bound applies to the rate already
    measured, as in Kafka); limits() is the per-request lookup, cached per (user, client-id).
    """

    MAX_CACHED = 10_000  # (user, client-id) pairs remembered between configuration changes

    def __init__(self, config: WindowConfig) -> None:
        self.config = config
        self._limits: dict[str, dict[EntityKey, float]] = {}
        self._windows: dict[WindowKey, QuotaWindow] = {}
        self._cache: dict[tuple[str, str], ClientLimits | None] = {}
        self.active = False  # any quota is configured: otherwise no request is looked at

    def load(self, quotas: Iterable[tuple[EntityKey, Mapping[str, float]]]) -> bool:
        """Takes the configured quotas (entities of users and client ids; other keys are ignored).
        Returns whether anything changed."""
        limits: dict[str, dict[EntityKey, float]] = {}
        for entity, values in quotas:
            for key, value in values.items():
                if key in ENFORCED:
                    limits.setdefault(key, {})[entity] = value
        if limits == self._limits:
            return False
        self._limits = limits
        self._cache.clear()
        self.active = bool(limits)
        return True

    @property
    def times_requests(self) -> bool:
        """Some request_percentage quota is configured: handler time is worth measuring."""
        return REQUEST in self._limits

    def limits(self, user: str, client_id: str, now: float = 0.0) -> ClientLimits | None:
        """The client's windows; `now` opens a new one (see Rate.idle)."""
        pair = (user, client_id)
        try:
            return self._cache[pair]
        except KeyError:
            pass
        produce, fetch, request = (self._window(key, user, client_id, now) for key in ENFORCED)
        found = None
        if produce is not None or fetch is not None or request is not None:
            found = ClientLimits(produce, fetch, request, self.config)
        if len(self._cache) >= self.MAX_CACHED:
            self._cache.clear()
        self._cache[pair] = found
        return found

    def _window(self, key: str, user: str, client_id: str, now: float) -> QuotaWindow | None:
        applied = resolve(self._limits.get(key, {}), user, client_id)
        if applied is None:
            return None
        bound, user_tag, client_tag = applied
        wkey = (key, user_tag, client_tag)
        window = self._windows.get(wkey)
        if window is None:
            cap = round(self.config.sample_seconds * 1000) if key == REQUEST else None
            window = self._windows[wkey] = QuotaWindow(self.config, bound, cap, opened=now)
        window.bound = bound
        return window

    def forget_idle(self, now: float) -> None:
        """Drops windows nobody has recorded in for a whole span (they measure 0 anyway), and the cached
        lookups that may point at them."""
        # A window opened within the span may belong to a request still running: forgotten, its bytes
        # would be counted into a window no longer kept, and the client's next request start afresh.
        span = self.config.span
        idle = [k for k, w in self._windows.items() if now - w.opened >= span and w.rate.idle(now)]
        if idle:
            for key in idle:
                del self._windows[key]
            self._cache.clear()

    @property
    def windows(self) -> int:
        return len(self._windows)

"""The nemesis: injects faults into a Deployment at random, one at a time, and records each.

A thread repeats: wait a random interval, pick a fault kind and a target, inject, hold it a random
duration, heal, then measure how long the deployment takes to serve again (Deployment.serves: Redis
answers, every broker answers Metadata through its proxy, a probe record is acknowledged), at most
`recovery_bound` seconds. Each fault is recorded as f="fault", status ok, value {kind, target, healed
(seconds from the injection until the heal completed, a restart included), recovered (seconds from
then until it serves again, None past the bound)}, plus `promoted` for a failover (seconds from the
kill to the replica's promotion). The record's start and end span the injection to the end of the
recovery, for the checker to relate anomalies to it.

Kinds come in shuffled rounds (every kind once per round), so a run long enough for a round
exercises each. One fault at a time: a fault is healed and the deployment serves (or the bound
passed) before the next one is drawn, so each recovery time belongs to one fault.

The plan is seeded: the kinds, target choices, intervals and durations are drawn from `rng` alone,
never from the deployment's state, so the same seed gives the same plan. A target choice is a number
resolved when the fault is injected (e.g. "the k-th current primary" for a failover).

Kinds (a deployment supports those its spec allows, see supported_kinds):
  broker_kill        SIGKILL a broker; restart it at the heal
  broker_pause       SIGSTOP a broker for at least pause_min seconds (past the session timeout); SIGCONT
  redis_kill         single Redis: SIGKILL redis-server; restart it on its port and data dir (AOF replay)
  redis_failover     cluster: SIGKILL a primary, wait for its replica's promotion; restart the old node,
                     which rejoins as a replica
  client_link_stall  the proxy in front of a broker holds every byte
  client_link_cut    the proxy in front of a broker closes its connections and refuses new ones
  redis_link_stall   the proxy in front of redis-server (single) or of one cluster node holds every byte
  redis_link_cut     the same proxy cuts
  redis_memory_full  maxmemory at half the memory used, noeviction, on every primary; then no limit
  cold_store_cut     the proxy in front of the S3 store cuts (the archiver and cold reads ride it out)
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from .deployment import Deployment, DeploymentSpec
from .history import History

BROKER_KINDS = ("broker_kill", "broker_pause", "client_link_stall", "client_link_cut")
LINK_KINDS = ("redis_link_stall", "redis_link_cut", "redis_memory_full")
ALL_KINDS = (*BROKER_KINDS, "redis_kill", "redis_failover", *LINK_KINDS, "cold_store_cut")


def supported_kinds(spec: DeploymentSpec) -> list[str]:
    kinds = [*BROKER_KINDS, "redis_kill" if spec.redis == "single" else "redis_failover", *LINK_KINDS]
    if spec.cold_store:
        kinds.append("cold_store_cut")
    return kinds


@dataclass(frozen=True, slots=True)
class PlannedFault:
    kind: str
    choice: int  # which target: resolved against the deployment when injected
    wait: float  # seconds before it is injected
    hold: float  # seconds it lasts (broker_pause: at least pause_min; a failover: until promoted)


@dataclass(slots=True)
class ActiveFault:
    """A fault injected and not yet healed."""

    planned: PlannedFault
    target: str
    heal: Callable[[], object]
    injected: float  # time.monotonic()
    hold: float
    detail: dict[str, Any]


def draw(
    rng: random.Random, kind: str, interval: tuple[float, float], duration: tuple[float, float]
) -> PlannedFault:
    """A fault of that kind: three draws from rng, whatever the deployment's state."""
    choice = rng.randrange(1 << 16)
    return PlannedFault(kind, choice, rng.uniform(*interval), rng.uniform(*duration))


class Nemesis:
    def __init__(
        self,
        deployment: Deployment,
        history: History,
        rng: random.Random,
        kinds: list[str] | None = None,
        interval: tuple[float, float] = (5.0, 15.0),
        duration: tuple[float, float] = (1.0, 5.0),
        recovery_bound: float = 60.0,
        pause_min: float | None = None,
    ) -> None:
        self.deployment = deployment
        self.history = history
        self.rng = rng
        supported = supported_kinds(deployment.spec)
        self.kinds = list(kinds) if kinds is not None else supported
        unknown = [k for k in self.kinds if k not in supported]
        if unknown or not self.kinds:
            raise ValueError(f"fault kinds {unknown or self.kinds} not among this deployment's {supported}")
        self.interval, self.duration = interval, duration
        self.recovery_bound = recovery_bound
        # Past the broker session, so the others notice a frozen broker (and its groups move).
        self.pause_min = deployment.session_s + 1.0 if pause_min is None else pause_min
        self.stop_event = threading.Event()
        self.faults: list[dict[str, Any]] = []  # the recorded values, in order
        self.errors: list[BaseException] = []
        self._thread: threading.Thread | None = None
        self._round: list[str] = []  # the kinds left in this round

    # -- the plan -----------------------------------------------------------------------------------
    def next_fault(self) -> PlannedFault:
        """Kinds are dealt in rounds, each round every kind once in a shuffled order: random, and a run
        of len(kinds) faults exercises every one."""
        if not self._round:
            self._round = list(self.kinds)
            self.rng.shuffle(self._round)
        return draw(self.rng, self._round.pop(), self.interval, self.duration)

    def plan(self, count: int) -> list[PlannedFault]:
        """The next `count` faults (drawn from rng, so the thread would then go on after them)."""
        return [self.next_fault() for _ in range(count)]

    # -- the thread ---------------------------------------------------------------------------------
    def start(self) -> Nemesis:
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 120.0) -> None:
        """Stops drawing faults; the one in progress is healed and its recovery measured first."""
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError("the nemesis did not stop")

    def _run(self) -> None:
        while not self.stop_event.is_set():
            fault = self.next_fault()
            if self.stop_event.wait(fault.wait):
                return
            try:
                self.run_fault(fault)
            except Exception as exc:  # a fault that could not be injected or healed: heal everything
                self.errors.append(exc)
                try:
                    self.deployment.heal_all()
                except Exception as again:
                    self.errors.append(again)

    # -- one fault ----------------------------------------------------------------------------------
    def run_fault(
        self, fault: PlannedFault, observe: Callable[[ActiveFault], None] | None = None
    ) -> dict[str, Any]:
        """Injects, holds, heals and measures one fault, and records it; `observe` runs while the fault
        holds (its time counts in the hold). Returns the recorded value."""
        start = self.history.now()
        active = self.inject(fault)
        if observe is not None:
            observe(active)
        left = active.injected + active.hold - time.monotonic()
        if left > 0:
            self.stop_event.wait(left)  # a stop cuts the hold short
        active.heal()
        healed_at = time.monotonic()
        recovered = self.measure_recovery()
        value = {
            "kind": fault.kind,
            "target": active.target,
            "healed": round(healed_at - active.injected, 3),
            "recovered": None if recovered is None else round(recovered, 3),
            **active.detail,
        }
        self.history.record("nemesis", "fault", "ok", start, value)
        self.faults.append(value)
        return value

    def measure_recovery(self) -> float | None:
        """Seconds until the deployment serves again; None if it does not within recovery_bound."""
        healed = time.monotonic()
        deadline = healed + self.recovery_bound
        while True:
            left = deadline - time.monotonic()
            if self.deployment.serves(min(5.0, max(left, 0.5))) is None:
                return time.monotonic() - healed
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)

    def inject(self, fault: PlannedFault) -> ActiveFault:
        d = self.deployment
        kind, choice = fault.kind, fault.choice
        hold, detail = fault.hold, {}
        injected = time.monotonic()
        heal: Callable[[], object]
        if kind in BROKER_KINDS:
            i = choice % len(d.brokers)
            target = d.brokers[i].name
            if kind == "broker_kill":
                d.kill_broker(i)
                heal = partial(d.restart_broker, i)
            elif kind == "broker_pause":
                d.pause_broker(i)
                hold = max(hold, self.pause_min)
                heal = partial(d.resume_broker, i)
            else:
                proxy = d.brokers[i].proxy
                (proxy.stall if kind == "client_link_stall" else proxy.cut)()
                heal = proxy.heal
        elif kind == "redis_kill":
            target = "redis"
            d.kill_redis(0)
            heal = partial(d.restart_redis, 0)
        elif kind == "redis_failover":
            victim, promoted = self._failover(choice)
            target = f"redis-{victim}"
            detail = {"promoted": round(promoted - injected, 3)}
            hold = max(hold, promoted - injected)
            heal = partial(self._rejoin, victim)
        elif kind in ("redis_link_stall", "redis_link_cut"):
            node = choice % len(d.redis_proxies)
            target = "redis" if d.cluster is None else f"redis-{node}"
            proxy = d.redis_proxies[node]
            (proxy.stall if kind == "redis_link_stall" else proxy.cut)()
            heal = proxy.heal
        elif kind == "redis_memory_full":
            target = "redis"
            d.set_memory_full(True)
            heal = partial(d.set_memory_full, False)
        elif kind == "cold_store_cut":
            assert d.s3_proxy is not None
            target = "s3"
            d.s3_proxy.cut()
            heal = d.s3_proxy.heal
        else:
            raise ValueError(f"unknown fault kind {kind}")
        return ActiveFault(fault, target, heal, injected, hold, detail)

    def _failover(self, choice: int, timeout: float = 30.0) -> tuple[int, float]:
        """SIGKILLs the chosen primary; returns its node index and when (monotonic) a replica took over."""
        d = self.deployment
        primaries = d.primaries()
        victim = primaries[choice % len(primaries)]
        d.kill_redis(victim)
        deadline = time.monotonic() + timeout
        while True:
            now = d.primaries()
            if len(now) == len(primaries) and victim not in now:
                return victim, time.monotonic()
            if time.monotonic() > deadline:
                raise RuntimeError(f"no replica took over from redis-{victim}: primaries {now}")
            time.sleep(0.05)

    def _rejoin(self, node: int) -> None:
        self.deployment.restart_redis(node)
        assert self.deployment.cluster is not None
        self.deployment.cluster.wait_ok(60)  # rejoined, and its replica link is up

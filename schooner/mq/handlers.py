"""What a handler answers, and what the consumer does with it.

- Success (or None): the message is acked.
- Retry: try again later, after the policy's backoff (or the delay given); it counts as an attempt.
- Fail: the handler failed (an exception becomes Fail); retried with backoff like Retry, and the error
  is recorded.
- DeadLetter: straight to the topic's dead letters.
A Retry or Fail on the last allowed attempt sends the message to the dead letters instead.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .message import Message


@dataclass(frozen=True, slots=True)
class Success:
    pass


@dataclass(frozen=True, slots=True)
class Retry:
    delay_ms: int | None = None  # None: the policy's backoff
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Fail:
    error_type: str
    message: str = ""

    @classmethod
    def of(cls, error: BaseException) -> Fail:
        return cls(type(error).__name__, str(error))


@dataclass(frozen=True, slots=True)
class DeadLetter:
    error_type: str = "DeadLettered"
    message: str = ""

    @classmethod
    def of(cls, error: BaseException) -> DeadLetter:
        return cls(type(error).__name__, str(error))


Outcome = Success | Retry | Fail | DeadLetter
Handler = Callable[[Message], "Outcome | None"]
AsyncHandler = Callable[[Message], "Awaitable[Outcome | None] | Outcome | None"]

SUCCESS = Success()


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter: base * multiplier^(attempt-1), capped, then +/- jitter of it."""

    max_attempts: int = 5  # handler calls in all, the first included
    base_delay_ms: int = 1000
    multiplier: float = 2.0
    max_delay_ms: int = 60_000
    jitter: float = 0.2  # fraction of the delay, drawn uniformly from [-jitter, +jitter]

    def delay_ms(self, attempt: int, rng: random.Random) -> int:
        """The wait after attempt `attempt` (1-based) failed."""
        delay = min(float(self.max_delay_ms), self.base_delay_ms * self.multiplier ** max(attempt - 1, 0))
        spread = delay * self.jitter
        return max(0, int(delay + rng.uniform(-spread, spread)))


@dataclass(frozen=True, slots=True)
class Ack:
    pass


@dataclass(frozen=True, slots=True)
class ScheduleRetry:
    delay_ms: int
    error: tuple[str, str] | None


@dataclass(frozen=True, slots=True)
class ToDeadLetters:
    error_type: str
    message: str


Action = Ack | ScheduleRetry | ToDeadLetters


def outcome_of(result: Any) -> Outcome:
    if result is None:
        return SUCCESS
    if isinstance(result, Success | Retry | Fail | DeadLetter):
        return result
    raise TypeError(f"a handler returns an Outcome or None, not {type(result).__name__}")


def resolve(outcome: Outcome, attempt: int, policy: RetryPolicy, rng: random.Random) -> Action:
    """The consumer's next step for a handler's outcome on the given attempt."""
    if isinstance(outcome, Success):
        return Ack()
    if isinstance(outcome, DeadLetter):
        return ToDeadLetters(outcome.error_type, outcome.message)
    error = (outcome.error_type, outcome.message) if isinstance(outcome, Fail) else None
    if attempt >= policy.max_attempts:
        if error is None:
            reason = outcome.reason if isinstance(outcome, Retry) else ""
            return ToDeadLetters("RetriesExhausted", reason or f"asked to retry {attempt} times")
        return ToDeadLetters(*error)
    if isinstance(outcome, Retry) and outcome.delay_ms is not None:
        return ScheduleRetry(max(0, outcome.delay_ms), error)
    return ScheduleRetry(policy.delay_ms(attempt, rng), error)

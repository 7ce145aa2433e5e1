"""Quota windows without I/O: Kafka's sampled rate, throttle times, and which entity's quota applies."""

from __future__ import annotations

import pytest

from schooner.security.quotas import (
    DEFAULT,
    FETCH,
    PRODUCE,
    REQUEST,
    EntityKey,
    QuotaBook,
    QuotaWindow,
    Rate,
    WindowConfig,
    resolve,
    throttle_seconds,
)

KAFKA = WindowConfig(samples=11, sample_seconds=1.0)  # Kafka's defaults


# -- the rate -------------------------------------------------------------------------------------------
def test_a_first_burst_is_measured_over_all_but_one_sample() -> None:
    rate = Rate(KAFKA)
    rate.record(100.0, now=0.0)
    assert rate.window(0.0) == 10.0
    assert rate.measure(0.3) == pytest.approx(100 / 10.3)


def test_the_window_grows_with_the_samples_kept_then_slides() -> None:
    rate = Rate(KAFKA)
    for t in range(11):
        rate.record(1.0, now=float(t))
    assert rate.window(10.5) == pytest.approx(10.5)  # past the 10 s a first burst is measured over
    rate.record(1.0, now=11.0)
    rate.record(1.0, now=12.0)  # 12 samples are kept (samples + 1): this one recycles t=0's
    # The sample of t=1 had its last event 11 s (the span) ago: it is emptied; t=2 is the oldest.
    assert rate.window(12.5) == pytest.approx(10.5)
    assert rate.total(12.5) == 11.0
    assert rate.measure(12.5) == pytest.approx(11 / 10.5)


def test_samples_without_events_for_a_whole_span_are_emptied() -> None:
    rate = Rate(KAFKA)
    rate.record(500.0, now=0.0)
    assert rate.measure(10.9) > 0 and not rate.idle(10.9)
    assert rate.measure(11.0) == 0.0 and rate.idle(11.0)


# -- throttle times -------------------------------------------------------------------------------------
def test_throttle_time_brings_the_observed_rate_back_to_the_bound() -> None:
    assert throttle_seconds(100.0, 50.0, 3.0) == 3.0  # O * W / (W + X) = T
    assert throttle_seconds(40.0, 50.0, 3.0) < 0


def test_a_client_that_waits_out_its_throttle_is_within_its_quota_again() -> None:
    window = QuotaWindow(WindowConfig(samples=20, sample_seconds=1.0), bound=1020.0)
    for t in range(31):
        window.rate.record(1000.0, now=float(t))
    # Samples from t=11 on count: 20000 over 19.5 s, then 300 more.
    ms = window.record(300.0, now=30.5)
    assert ms == round((20300 / 19.5 - 1020) / 1020 * 19.5 * 1000)
    assert window.rate.measure(30.5 + ms / 1000) == pytest.approx(1020.0, rel=1e-3)


def test_request_percentage_throttle_is_capped_at_one_sample() -> None:
    window = QuotaWindow(KAFKA, bound=1.0, max_throttle_ms=1000)
    assert window.record(500.0, now=0.0) == 1000


def test_a_zero_quota_throttles_any_traffic() -> None:
    assert QuotaWindow(KAFKA, bound=0.0).record(1.0, now=0.0) > 0
    assert QuotaWindow(KAFKA, bound=0.0, max_throttle_ms=1000).record(1.0, now=0.0) == 1000


def test_unrecord_takes_a_throttled_fetch_back() -> None:
    window = QuotaWindow(KAFKA, bound=100.0)
    window.record(900.0, now=0.0)
    assert window.record(500.0, now=0.1) > 0
    window.unrecord(500.0, now=0.1)
    assert window.rate.total(0.1) == 900.0


@pytest.mark.parametrize("request_bytes", [1_000, 20_000])
def test_a_client_obeying_its_throttle_gets_its_quota(request_bytes: int) -> None:
    """A producer that sends as fast as it may (waiting out each throttle) averages its quota."""
    quota, now, sent = 50_000.0, 0.0, 0
    window = QuotaWindow(WindowConfig(samples=11, sample_seconds=1.0), bound=quota)
    while now < 120.0:
        ms = window.record(request_bytes, now)
        sent += request_bytes
        now += max(ms / 1000, 0.001)
    assert sent / now == pytest.approx(quota, rel=0.1)


def test_a_fetcher_given_nothing_while_throttled_gets_its_quota() -> None:
    """A consumer whose throttled fetches are empty (and unrecorded) averages its quota, no more."""
    quota, now, got = 200_000.0, 0.0, 0
    window = QuotaWindow(WindowConfig(samples=4, sample_seconds=1.0), bound=quota)
    while now < 120.0:
        ms = window.record(16_000, now)
        if ms > 0:
            window.unrecord(16_000, now)
        else:
            got += 16_000
        now += max(ms / 1000, 0.01)
    assert got / now == pytest.approx(quota, rel=0.1)
    assert got / now <= quota * 1.05


# -- which quota applies ----------------------------------------------------------------------------------
ORDER: list[tuple[EntityKey, tuple[str, str]]] = [
    (("alice", "app"), ("alice", "app")),
    (("alice", DEFAULT), ("alice", "app")),
    (("alice", None), ("alice", "")),
    ((DEFAULT, "app"), ("alice", "app")),
    ((DEFAULT, DEFAULT), ("alice", "app")),
    ((DEFAULT, None), ("alice", "")),
    ((None, "app"), ("", "app")),
    ((None, DEFAULT), ("", "app")),
]


def test_entities_apply_in_kafkas_order() -> None:
    limits = {entity: float(i) for i, (entity, _) in enumerate(ORDER)}
    for i, (entity, (user_tag, client_tag)) in enumerate(ORDER):
        assert resolve(limits, "alice", "app") == (float(i), user_tag, client_tag), entity
        del limits[entity]
    assert resolve(limits, "alice", "app") is None


def test_other_users_and_clients_do_not_match_named_entities() -> None:
    limits = {("alice", None): 1.0, (None, "app"): 2.0}
    assert resolve(limits, "bob", "other") is None
    assert resolve(limits, "bob", "app") == (2.0, "", "app")


def test_the_book_ignores_ip_and_unenforced_keys() -> None:
    book = QuotaBook(KAFKA)
    assert not book.active
    assert not book.load([((None, "app"), {"controller_mutation_rate": 5.0})])
    assert not book.active and book.limits("alice", "app") is None
    assert book.load([((None, "app"), {PRODUCE: 5.0, REQUEST: 10.0})])
    assert book.active and book.times_requests
    assert not book.load([((None, "app"), {PRODUCE: 5.0, REQUEST: 10.0})])  # unchanged


def test_a_user_quota_is_one_window_for_all_its_clients_and_a_default_one_each() -> None:
    book = QuotaBook(KAFKA)
    book.load([(("alice", None), {PRODUCE: 100.0}), ((None, DEFAULT), {FETCH: 10.0})])
    one, two = book.limits("alice", "a"), book.limits("alice", "b")
    assert one is not None and two is not None
    assert one.produce is two.produce and one.fetch is not two.fetch
    bob = book.limits("bob", "a")
    assert bob is not None and bob.produce is None and bob.fetch is one.fetch  # shared per client id
    assert one.request is None and one.fetch_window_bytes == 100  # 10 B/s over 10 whole samples


def test_a_changed_bound_keeps_what_was_measured() -> None:
    book = QuotaBook(KAFKA)
    book.load([((None, "app"), {PRODUCE: 100.0})])
    first = book.limits("u", "app")
    assert first is not None and first.produce is not None
    first.produce.record(2000.0, 0.0)
    book.load([((None, "app"), {PRODUCE: 1000.0})])
    again = book.limits("u", "app")
    assert again is not None and again.produce is first.produce and again.produce.bound == 1000.0
    assert again.produce.rate.total(0.1) == 2000.0


def test_idle_windows_are_forgotten() -> None:
    book = QuotaBook(KAFKA)
    book.load([((None, DEFAULT), {PRODUCE: 100.0})])
    limits = book.limits("u", "app")
    assert limits is not None and limits.produce is not None
    limits.produce.record(1.0, 0.0)
    book.forget_idle(5.0)
    assert book.windows == 1
    book.forget_idle(11.0)
    assert book.windows == 0
    fresh = book.limits("u", "app")
    assert fresh is not None and fresh.produce is not limits.produce


def test_a_window_a_request_just_opened_is_not_forgotten_before_it_records() -> None:
    """A reload's sweep ran while a client's first Produce was being served: its new, still empty
    window was dropped, the bytes went into a window nobody kept, and the next request started afresh
    (the conformance test against Kafka saw a throttle 2 s short)."""
    book = QuotaBook(KAFKA)
    book.load([((None, DEFAULT), {PRODUCE: 100.0})])
    limits = book.limits("u", "app", now=5.0)
    assert limits is not None and limits.produce is not None
    book.forget_idle(5.5)  # the request is still running
    assert book.windows == 1
    limits.produce.record(1.0, 6.0)
    assert book.limits("u", "app", now=6.0) is limits
    book.forget_idle(6.0 + KAFKA.span)
    assert book.windows == 0

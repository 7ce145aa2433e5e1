"""The Redis Cluster figures: produce and fetch on 1 and 3 primaries (one and two brokers) and on one
server, side by side, and the failover time, in one short run."""

from __future__ import annotations

from bench import cluster, report

MESSAGES = 1200


def test_cluster_figures_are_measured_side_by_side_and_the_failover_loses_nothing() -> None:
    out = cluster.run(messages=MESSAGES, runs=1, failover_runs=1)
    for kind in ("produce", "fetch"):
        rates = out["rates"][kind]
        assert set(rates) == set(cluster.SETUPS) and all(len(r) == 1 and r[0] > 0 for r in rates.values())
        for name, slug in cluster.SLUGS.items():
            assert out[f"{kind}_{slug}_msgs_per_s"] == round(rates[name][0])
            assert out[f"{kind}_{slug}_ratio"] == round(rates[name][0] / rates[cluster.BASE][0], 3)
            assert set(out[f"{kind}_cores"][slug]) == {"broker", "redis", "client", "machine"}
    assert out["produce_p1_ratio"] == 1.0
    assert 100 < out["stream_bytes_per_record"] <= out["partition_bytes_per_record"]
    (failover,) = out["failover_runs"]
    # A lost or doubled record fails the bench run itself; the figures say so too.
    assert failover["lost"] == 0 and failover["duplicated"] == 0 and failover["records"] > 0
    assert 0 < out["failover_s"] == failover["acked_s"] < 60
    assert 0 < out["promoted_s"] == failover["promoted_s"] < 60
    rows = report.cluster_rows(out)
    assert len(rows) == 7
    assert rows[0][3] == f"{out['produce_p3_ratio']:.3f}" and rows[-1][1] == f"{out['failover_s']:.2f} s"

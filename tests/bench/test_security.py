"""The security figures: produce and fetch over SASL_SSL and PLAINTEXT, side by side, in one short run."""

from __future__ import annotations

from bench import report, security

MESSAGES = 1000


def test_sasl_ssl_and_plaintext_are_measured_side_by_side() -> None:
    out = security.run(messages=MESSAGES, runs=2)
    for kind in ("produce", "fetch"):
        plain, secure = out["rates"][kind]["PLAINTEXT"], out["rates"][kind]["SASL_SSL"]
        assert len(plain) == len(secure) == 2 and all(r > 0 for r in plain + secure)
        assert out[f"{kind}_plaintext_msgs_per_s"] == round(report.median(plain))
        assert out[f"{kind}_sasl_ssl_msgs_per_s"] == round(report.median(secure))
        paired = [s / p for s, p in zip(secure, plain, strict=True)]
        assert out[f"{kind}_ratio"] == round(report.median(paired), 3)
    rows = report.security_rows(out)
    assert [r[3] for r in rows] == [f"{out['produce_ratio']:.3f}", f"{out['fetch_ratio']:.3f}"]

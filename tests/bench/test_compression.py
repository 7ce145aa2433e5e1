"""The compression figure: producer-compressed JSON, fetched with its codec and from an uncompressed topic."""

from __future__ import annotations

from bench import compression, report
from bench.servers import Endpoints


def test_fetches_carry_the_producers_codec_and_the_report_shows_both(endpoints: Endpoints) -> None:
    out = compression.run(endpoints, messages=3_000, runs=1)
    assert out["messages"] == 3_000 and 100 < out["value_bytes"] < 300
    for name, c in out["codecs"].items():
        # Compressed end to end: several times fewer bytes than the uncompressed topic's fetches, and
        # near what the producer sent (lz4 is compressed faster, at a lower level, on fetch).
        assert c["uncompressed_fetch_bytes_per_record"] > out["value_bytes"], name
        assert c["fetch_bytes_per_record"] < c["uncompressed_fetch_bytes_per_record"] / 2.5, name
        assert c["fetch_bytes_per_record"] < c["producer_bytes_per_record"] * 1.5, name
        assert c["bytes_ratio"] > 2.5, name
    rows = report.compression_rows(out)
    assert [r[0].split(",")[1].split()[0] for r in rows[::2]] == list(compression.CODECS)

"""The broker's Prometheus metrics (docs/operations.md, "Metrics").

meters.py: counters and histograms, counted on the request path (per request and per partition, never
per record); gauges.py: connections, end offsets and lag, read at scrape time; exporter.py: the HTTP
endpoint; errors.py: the error codes of a response. A broker has them when `metrics_port` is set.
"""

from __future__ import annotations

from .meters import BrokerMetrics, TopicMeters

__all__ = ["BrokerMetrics", "TopicMeters"]

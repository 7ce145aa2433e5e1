"""The Spark layer: format("schooner") for spark.read / readStream and df.write / writeStream.

Pure Python on PySpark's Data Source API (Spark 4); it sits on schooner.storage only. See docs/spark.md.
"""

from __future__ import annotations

from .source import SchoonerDataSource, register
from .topics import ensure_topic

__all__ = ["SchoonerDataSource", "ensure_topic", "register"]

"""Pipelines: a Python file that defines build(spark, options), run on a SparkSession made here.

    def build(spark: SparkSession, options: dict[str, str]) -> StreamingQuery | None:
        ...

options holds "redis.url" and "keyspace" (pass them to format("schooner") as they are),
"checkpointLocation" (a folder for this pipeline's checkpoints), and every --option KEY=VALUE given
on the command line. A returned streaming query is awaited; None means the work is done (a batch job).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from .source import register

SPEED_CONFS = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",  # Spark's 200 is meant for clusters, not one machine
    "spark.ui.showConsoleProgress": "false",
}


def load(path: Path) -> Callable[[Any, dict[str, str]], Any]:
    spec = importlib.util.spec_from_file_location(f"schooner_pipeline_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path} is not a Python file")
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))  # a pipeline may import its neighbours
    spec.loader.exec_module(module)
    build = getattr(module, "build", None)
    if not callable(build):
        raise ValueError(f"{path} defines no build(spark, options) function")
    return build


def session(master: str, confs: Mapping[str, str], app_name: str = "schooner-pipeline") -> Any:
    """A SparkSession that knows format("schooner"). Python workers run this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**SPEED_CONFS, **confs}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def run(path: Path, options: dict[str, str], master: str, confs: Mapping[str, str]) -> None:
    """Builds the pipeline and waits for its query; SIGTERM or Ctrl-C stops the query cleanly."""
    build = load(path)
    spark = session(master, confs, app_name=f"schooner-pipeline-{path.stem}")
    try:
        query = build(spark, options)
        if query is None:
            return
        previous = signal.getsignal(signal.SIGTERM)

        def stop(signum: int, frame: FrameType | None) -> None:
            query.stop()

        signal.signal(signal.SIGTERM, stop)
        try:
            query.awaitTermination()
        except KeyboardInterrupt:
            query.stop()
        finally:
            signal.signal(signal.SIGTERM, previous)
        if query.exception() is not None:
            raise RuntimeError(f"the pipeline's query failed: {query.exception()}")
    finally:
        spark.stop()

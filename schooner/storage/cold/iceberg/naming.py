"""The names and settings of the cold tier's Iceberg tables: identifiers, table properties, and the
FileIO settings of the cold store."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .. import layout
from ..location import ColdLocation


def iceberg_name(text: str) -> str:
    """An Iceberg name part: letters, digits and "_" (a dot would split a name into levels)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def table_properties(row_group_rows: int) -> dict[str, str]:
    return {
        "write.parquet.compression-codec": "zstd",
        "write.parquet.row-group-limit": str(row_group_rows),
        # Statistics only where reads prune by them (offsets, times); counts elsewhere.
        "write.metadata.metrics.default": "counts",
        f"write.metadata.metrics.column.{layout.OFFSET}": "full",
        f"write.metadata.metrics.column.{layout.TS}": "full",
        # Bounded metadata: old metadata files go after each commit, manifests are merged.
        "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": "8",
        "commit.manifest-merge.enabled": "true",
        "schooner.layout": "kafka-records",
    } | NO_RETRIES


# pyiceberg retries a failed commit on the new snapshot by itself, appending the rows again: an archive
# step must fail instead, and look at what the other writer committed.
NO_RETRIES = {"commit.retry.num-retries": "0"}


def io_properties(location: ColdLocation) -> dict[str, str]:
    """pyiceberg's FileIO settings of the store (pyarrow's, as the reads)."""
    props = {"py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"}
    names = {
        "AWS_ENDPOINT_URL": "s3.endpoint",
        "AWS_REGION": "s3.region",
        "AWS_ACCESS_KEY_ID": "s3.access-key-id",
        "AWS_SECRET_ACCESS_KEY": "s3.secret-access-key",
    }
    options: Mapping[str, str] = location.storage_options
    props.update({names[k]: v for k, v in options.items() if k in names})
    return props

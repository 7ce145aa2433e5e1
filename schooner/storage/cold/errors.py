"""The cold tier's exceptions: what the broker maps to Kafka errors.

Every one is retriable from a client's point of view (Kafka answers a remote-storage failure with
KAFKA_STORAGE_ERROR, a retriable code): the store may come back, a missing file may be a read that
raced a trim and sees the new start on its next try.
"""

from __future__ import annotations


class ColdStoreError(Exception):
    """Base of the cold tier's errors."""

    retriable = True


class ColdStoreUnavailable(ColdStoreError):
    """The cold store could not be reached or refused the request (network, credentials, disk)."""


class ColdDataCorrupt(ColdStoreError):
    """A data file the table names is missing or unreadable, even after the table was read again."""


class ArchiveConflict(ColdStoreError):
    """An archive step did not fit: it leaves a gap after what the table holds, or another writer
    committed the same partition's app transaction at the same time. Read archived_end and go on."""

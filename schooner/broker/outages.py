"""What a Redis failure is answered with, in each family of APIs: one table for handlers and the data path.

Redis unreachable or refusing writes. Clients must retry, so each family answers with a retriable Kafka
code (never UNKNOWN_SERVER_ERROR), chosen here once.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from ..storage.redis.calls import StorageError

STORAGE_ERRORS = (StorageError, OSError)
# Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords:
LOG_UNAVAILABLE = ErrorCode.kafka_storage_error
APPEND_UNANSWERED = ErrorCode.request_timed_out  # an append sent without a reply: "possibly persisted"
GROUPS_UNAVAILABLE = ErrorCode.coordinator_not_available  # group membership and committed offsets
ADMIN_UNAVAILABLE = ErrorCode.request_timed_out  # topic and config changes (CreateTopics, AlterConfigs, ...)
PRODUCER_IDS_UNAVAILABLE = ErrorCode.coordinator_load_in_progress  # InitProducerId

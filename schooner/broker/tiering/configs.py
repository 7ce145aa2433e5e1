"""DescribeConfigs of a broker: the cold store's and the archiver's settings (docs/configuration.md)."""

from __future__ import annotations

from ...config import Settings
from ...storage.topics.config import ConfigSource, ConfigType, ConfigValue


def _source(settings: Settings, name: str) -> int:
    """STATIC_BROKER_CONFIG when the operator gave the setting (or it differs from the default)."""
    given = name in settings.explicit or getattr(settings, name) != getattr(Settings(), name)
    return ConfigSource.STATIC_BROKER_CONFIG if given else ConfigSource.DEFAULT_CONFIG


_TIERING_DOCS = {
    "cold_store_url": "The cold tier of topics with remote.storage.enable: a path, file:// or s3:// URL "
    "(docs/tiered-storage.md). Unset: <data_dir>/cold with the embedded Redis, none with an external one.",
    "cold_store_endpoint": "The S3-compatible endpoint of an s3:// cold store.",
    "cold_store_region": "The region of an s3:// cold store.",
    "cold_store_access_key_id": "The access key id of an s3:// cold store.",
    "cold_store_secret_access_key": "The secret key of an s3:// cold store (never shown).",
    "cold_store_allow_http": "Whether an s3:// cold store may be reached over plain HTTP (unset: when the "
    "endpoint is http://).",
    "archive_interval_ms": "How often the archiver moves tiered partitions' records to the cold tier.",
    "archive_batch_records": "The most records one archive step (one Delta commit) takes.",
    "archive_concurrency": "How many partitions this broker archives at once.",
}


def tiering_config_values(settings: Settings) -> list[ConfigValue]:
    """The cold store and archiver settings, under their setting names, and Kafka's
    remote.log.storage.system.enable (whether this broker has a cold store)."""
    out = []
    for name, doc in _TIERING_DOCS.items():
        raw = getattr(settings, name)
        if name == "cold_store_url":
            raw = settings.cold_store_root
        value = None if raw is None or name == "cold_store_secret_access_key" else str(raw)
        if isinstance(raw, bool):
            value = str(raw).lower()
        kind = ConfigType.INT if name.startswith("archive_") else ConfigType.STRING
        if name == "cold_store_allow_http":
            kind = ConfigType.BOOLEAN
        source = _source(settings, name)
        out.append(ConfigValue(name, value, source, True, kind, ((name, value, source),), doc))
    enabled = "true" if settings.cold_store_root is not None else "false"
    source = _source(settings, "cold_store_url")
    doc = "Whether this broker has a cold store, so topics may set remote.storage.enable (cold_store_url)."
    name = "remote.log.storage.system.enable"
    out.append(ConfigValue(name, enabled, source, True, ConfigType.BOOLEAN, ((name, enabled, source),), doc))
    return out

"""Where the cold tier lives: the root URL, the storage options delta-rs takes, and each topic's table.

Root URLs: a local path, `file:///path`, or `s3://bucket/prefix` (any S3-compatible store; endpoint,
region and credentials as options). Each topic's table is `<root>/<namespace>/<topic name>/<topic id>`:
the namespace is the keyspace prefix, so tenants never share a table; the topic id keeps a topic that
was deleted and created again from reading its predecessor's records.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pyarrow.fs as pafs

# delta-rs (object_store) retries a failed S3 request itself; the archiver retries whole steps, so a
# down store should fail a step in seconds rather than hold a thread for minutes.
S3_DEFAULTS = {
    "max_retries": "2",
    "retry_timeout": "10s",
    "connect_timeout": "5s",
    "timeout": "60s",
    # Commits to one table come from several brokers (one archiver per partition): a commit file is
    # written with If-None-Match so that two writers never both take a log version.
    "conditional_put": "etag",
}


@dataclass(frozen=True, slots=True)
class ColdLocation:
    root: str  # a local absolute path, or s3://bucket/prefix without a trailing slash
    storage_options: Mapping[str, str] = field(default_factory=dict)

    @property
    def local(self) -> bool:
        return "://" not in self.root

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        endpoint: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        allow_http: bool | None = None,
        options: Mapping[str, str] | None = None,
    ) -> ColdLocation:
        """The location of a root URL; the S3 settings are ignored for a local root. `options` are
        passed to delta-rs as they are and win over everything else."""
        parts = urlsplit(url)
        if parts.scheme in ("", "file"):
            path = unquote(parts.path) if parts.scheme else url
            if not path:
                raise ValueError(f"cold store URL without a path: {url!r}")
            return cls(str(Path(path).expanduser().resolve()), dict(options or {}))
        if parts.scheme not in ("s3", "s3a"):
            raise ValueError(f"cold store URL must be a path, file:// or s3://: {url!r}")
        if not parts.netloc:
            raise ValueError(f"cold store URL without a bucket: {url!r}")
        s3: dict[str, str] = dict(S3_DEFAULTS)
        if endpoint:
            s3["AWS_ENDPOINT_URL"] = endpoint
            allow_http = endpoint.startswith("http://") if allow_http is None else allow_http
        if region:
            s3["AWS_REGION"] = region
        if access_key_id:
            s3["AWS_ACCESS_KEY_ID"] = access_key_id
        if secret_access_key:
            s3["AWS_SECRET_ACCESS_KEY"] = secret_access_key
        if allow_http:
            s3["AWS_ALLOW_HTTP"] = "true"
        s3.update(options or {})
        return cls(f"s3://{parts.netloc}{parts.path.rstrip('/')}", s3)

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """pyarrow's filesystem of the store, and the root's path in it: for what delta-rs does not do
        (plain objects: the --check probe, and removing a deleted topic's whole table)."""
        if self.local:
            return pafs.LocalFileSystem(), self.root
        options = self.storage_options
        endpoint = options.get("AWS_ENDPOINT_URL")
        scheme = "https"
        if endpoint and "://" in endpoint:
            scheme, endpoint = endpoint.split("://", 1)
        s3 = pafs.S3FileSystem(
            access_key=options.get("AWS_ACCESS_KEY_ID"),
            secret_key=options.get("AWS_SECRET_ACCESS_KEY"),
            region=options.get("AWS_REGION"),
            endpoint_override=endpoint,
            scheme=scheme,
            connect_timeout=5,
            request_timeout=10,
        )
        return s3, self.root.removeprefix("s3://")

    def table_uri(self, namespace: str, topic: str, topic_id: uuid.UUID) -> str:
        # A tenant keyspace is "<prefix>:tenant:<name>": colons become folders, as Hadoop paths (Spark)
        # refuse a colon in a name.
        return f"{self.root}/{namespace.replace(':', '/')}/{topic}/{topic_id}"

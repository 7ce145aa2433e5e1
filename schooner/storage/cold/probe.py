"""A probe of the cold store for `schooner broker --check`: a small object written under the root,
read back and deleted, with the same endpoint, region and credentials the archiver uses.

The archiver writes through delta-rs, which offers no plain object put or delete, so the probe goes
through pyarrow's filesystems (a local folder, or S3 with the location's options): what it proves is
that the store is there and that these credentials may write, read and delete under the root.
"""

from __future__ import annotations

import uuid

import pyarrow.fs as pafs

from .errors import ColdStoreUnavailable
from .location import ColdLocation

PROBE_FOLDER = "_schooner_check"


def _filesystem(location: ColdLocation) -> tuple[pafs.FileSystem, str]:
    """The filesystem and the root's path within it."""
    if location.local:
        return pafs.LocalFileSystem(), location.root
    options = location.storage_options
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
    return s3, location.root.removeprefix("s3://")


def probe(location: ColdLocation) -> None:
    """Writes, reads back and deletes a small object under the root. Raises ColdStoreUnavailable with
    what failed."""
    fs, root = _filesystem(location)
    body = uuid.uuid4().bytes
    folder = f"{root}/{PROBE_FOLDER}-{uuid.uuid4().hex}"  # one of its own: checks may run at once
    path = f"{folder}/probe"
    step = "write"
    try:
        if location.local:
            fs.create_dir(folder, recursive=True)
        with fs.open_output_stream(path) as out:
            out.write(body)
        step = "read"
        with fs.open_input_stream(path) as back:
            if back.read() != body:
                raise ColdStoreUnavailable(f"{location.root}: the probe read back other bytes")
        step = "delete"
        fs.delete_dir(folder)  # the object and the folder (on S3, the marker pyarrow may leave)
    except (OSError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ColdStoreUnavailable(f"{location.root}: cannot {step} a probe object: {reason}") from exc

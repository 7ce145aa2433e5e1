"""A probe of the cold store for `schooner broker --check`: a small object written under the root,
read back and deleted, with the same endpoint, region and credentials the archiver uses.

The archiver writes through delta-rs, which offers no plain object put or delete, so the probe goes
through pyarrow's filesystems (a local folder, or S3 with the location's options): what it proves is
that the store is there and that these credentials may write, read and delete under the root.
"""

from __future__ import annotations

import uuid

from .errors import ColdStoreUnavailable
from .location import ColdLocation

PROBE_FOLDER = "_schooner_check"


def probe(location: ColdLocation) -> None:
    """Writes, reads back and deletes a small object under the root. Raises ColdStoreUnavailable with
    what failed."""
    fs, root = location.filesystem()
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

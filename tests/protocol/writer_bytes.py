"""The bytes a fast response writer (fetch_response.py, produce_response.py) and kio's write."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from kio.serial import entity_writer


def fast_and_kio(writer_for: Callable[[type], Any], response: Any) -> tuple[bytes, bytes]:
    fast, kio = io.BytesIO(), io.BytesIO()
    writer = writer_for(type(response))
    assert writer is not None
    writer(fast, response)
    entity_writer(type(response))(kio, response)
    return fast.getvalue(), kio.getvalue()

from typing import Any

def encode_plain(
    entries: list[Any],
    start: int,
    bits: int,
    shift: int,
    log_append_time: bool,
    max_bytes: int,
    used: int,
    counted: int,
    batch_target: int,
    /,
) -> tuple[bytes, int, int, int, int, bool]: ...
def encode_resp(
    reply: bytes | bytearray,
    pos: int,
    index: int,
    count: int,
    bits: int,
    shift: int,
    log_append_time: bool,
    max_bytes: int,
    used: int,
    counted: int,
    batch_target: int,
    /,
) -> tuple[bytes, int, int, int, int, int, bool, bytes | None]: ...
def crc32c(data: bytes, /) -> int: ...

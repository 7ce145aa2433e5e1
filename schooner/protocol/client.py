"""The client side of the wire format, sans-IO: a typed request to a frame, a response frame back to its
typed body. The broker uses messages.py (the server side); the CLI's small admin client uses this."""

from __future__ import annotations

import io
import struct

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32
from kio.static.protocol import RequestPayload, ResponsePayload

from .apis import ApiKey, response_type
from .errors import ProtocolError
from .framing import frame
from .lengths import skip_tagged_fields


def encode_request(body: RequestPayload, correlation_id: int, client_id: str | None) -> bytes:
    """A framed request: header v2 for flexible versions, v1 otherwise, then the body."""
    header_type = RequestHeaderV2 if body.__flexible__ else RequestHeaderV1
    header = header_type(
        request_api_key=body.__api_key__,
        request_api_version=body.__version__,
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    buf = io.BytesIO()
    entity_writer(header_type)(buf, header)  # type: ignore[arg-type]
    entity_writer(type(body))(buf, body)
    return frame(buf.getvalue())


def decode_response(data: bytes, request: RequestPayload) -> tuple[int, ResponsePayload]:
    """The correlation id and body of a response frame (without its size prefix) to `request`.

    Flexible responses carry an empty tagged-field section after the correlation id; ApiVersions never
    does (KIP-511), so that a client can read it before it knows the broker's versions."""
    if len(data) < 4:
        raise ProtocolError("truncated response header")
    (correlation_id,) = struct.unpack_from(">i", data, 0)
    pos = 4
    if request.__flexible__ and request.__api_key__ != ApiKey.API_VERSIONS:
        pos = skip_tagged_fields(data, pos, len(data))
    body, _ = entity_reader(response_type(request.__api_key__, request.__version__))(data, pos)
    return correlation_id, body

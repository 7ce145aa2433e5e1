"""Failures found while reading a client's bytes. The broker answers each by closing the connection."""


class ProtocolError(Exception):
    """The peer sent bytes that are not a valid Kafka request."""


class FrameTooLarge(ProtocolError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit}")
        self.size = size
        self.limit = limit


class MalformedRequest(ProtocolError):
    """The frame is truncated, or its fields do not parse."""


class UnsupportedRequest(ProtocolError):
    """An API key or version that this broker does not serve."""

    def __init__(
        self, api_key: int, api_version: int, correlation_id: int, client_id: str | None = None
    ) -> None:
        super().__init__(f"unsupported API key {api_key} version {api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id  # from the request header, for the broker's log

"""A small blocking Kafka client for the admin APIs that confluent-kafka lacks: KIP-932's share-group
APIs (ShareGroupDescribe, DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets)
and ListGroups with a types filter.

Hand-written because no maintained Python client speaks them: librdkafka's admin API has no share-group
calls (its ConsumerGroupType has no SHARE), and kafka-python and aiokafka stop before KIP-932. It is
built on schooner.protocol (kio's message types, the client-side encoding of protocol/client.py and the
framing), over one socket per broker, with TLS (the ssl module) and SASL PLAIN or SCRAM from the same
ClientSettings as the librdkafka clients. One request at a time per connection: the CLI needs no more.
"""

from __future__ import annotations

import socket
import ssl
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestPayload, ResponsePayload

from ...protocol.apis import ApiKey, api_name, request_type
from ...protocol.client import decode_response, encode_request
from ...protocol.errors import ProtocolError
from ...protocol.messages import make
from ...security.sasl.mechanism import SaslFailure
from ...security.sasl.scram_client import ScramClient, plain_token
from ..client_options import ClientSettings
from . import KafkaFailure

CLIENT_ID = "schooner-cli"
KEY_TYPE_GROUP = 0
R = TypeVar("R", bound=ResponsePayload)


class Connection:
    """One authenticated connection to one broker, and the API versions it serves."""

    def __init__(self, host: str, port: int, settings: ClientSettings) -> None:
        self.address = f"{host}:{port}"
        self._settings = settings
        self._correlation = 0
        try:
            raw = socket.create_connection((host, port), timeout=settings.timeout_s)
        except OSError as exc:
            raise KafkaFailure(
                f"no broker answered at {self.address} ({_reason(exc)})", "_TRANSPORT"
            ) from None
        self._sock: socket.socket = raw
        try:
            if settings.security_protocol in ("SSL", "SASL_SSL"):
                try:
                    self._sock = _tls_context(settings).wrap_socket(raw, server_hostname=host)
                except (OSError, ssl.SSLError) as exc:
                    raise KafkaFailure(f"TLS handshake with {self.address} failed: {_reason(exc)}") from None
            self.versions = self._api_versions()
            if settings.uses_sasl:
                self._authenticate()
        except BaseException:
            self._sock.close()
            raise

    def close(self) -> None:
        self._sock.close()

    def version_of(self, api: ApiKey, wanted: tuple[int, ...]) -> int:
        """The highest of `wanted` that the broker serves for the API."""
        low, high = self.versions.get(api, (0, -1))
        for version in sorted(wanted, reverse=True):
            if low <= version <= high:
                return version
        raise KafkaFailure(f"the broker at {self.address} does not serve {api_name(api)}")

    def call(self, body: RequestPayload) -> Any:
        """Sends one request and returns its response body."""
        self._correlation += 1
        try:
            self._sock.sendall(encode_request(body, self._correlation, CLIENT_ID))
            frame = self._read(int.from_bytes(self._read(4), "big"))
            correlation, response = decode_response(frame, body)
        except TimeoutError:
            waited = f"{self._settings.timeout_s:g}s"
            raise KafkaFailure(f"no answer from {self.address} in {waited}", "_TIMED_OUT") from None
        except (OSError, ProtocolError) as exc:
            raise KafkaFailure(
                f"the connection to {self.address} failed: {_reason(exc)}", "_TRANSPORT"
            ) from None
        except Exception as exc:  # kio raises several types for bytes it cannot read
            raise KafkaFailure(f"cannot read the answer of {self.address}: {exc}") from None
        if correlation != self._correlation:
            raise KafkaFailure(f"{self.address} answered another request ({correlation})")
        return response

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self._sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed by the broker")
            data += chunk
        return bytes(data)

    def _api_versions(self) -> dict[int, tuple[int, int]]:
        body = make(
            request_type(ApiKey.API_VERSIONS, 3), client_software_name=CLIENT_ID, client_software_version="1"
        )
        response = self.call(body)
        if response.error_code != ErrorCode.none:
            raise KafkaFailure(f"{self.address} refused ApiVersions: {response.error_code.name}")
        return {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}

    def _authenticate(self) -> None:
        s = self._settings
        mechanism = s.sasl_mechanism or "PLAIN"
        if s.sasl_username is None or s.sasl_password is None:
            raise KafkaFailure(f"{s.security_protocol} needs --sasl-username and --sasl-password")
        handshake = self.call(make(request_type(ApiKey.SASL_HANDSHAKE, 1), mechanism=mechanism))
        if handshake.error_code != ErrorCode.none:
            offered = ", ".join(handshake.mechanisms) or "none"
            raise KafkaFailure(f"{self.address} does not take SASL {mechanism} (it offers {offered})")
        try:
            if mechanism == "PLAIN":
                self._token(plain_token(s.sasl_username, s.sasl_password))
                return
            scram = ScramClient(mechanism, s.sasl_username, s.sasl_password)
            server_first = self._token(scram.first())
            scram.verify(self._token(scram.final(server_first)))
        except SaslFailure as exc:
            raise KafkaFailure(f"authentication failed: {exc}", "SASL_AUTHENTICATION_FAILED") from None

    def _token(self, token: bytes) -> bytes:
        response = self.call(make(request_type(ApiKey.SASL_AUTHENTICATE, 2), auth_bytes=token))
        if response.error_code != ErrorCode.none:
            raise KafkaFailure(
                f"authentication failed: {response.error_message or response.error_code.name}",
                response.error_code.name.upper(),
            )
        return bytes(response.auth_bytes)


class WireClient:
    """Connections to the bootstrap broker and to group coordinators, opened as needed."""

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self._connections: dict[tuple[str, int], Connection] = {}

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    def any_broker(self) -> Connection:
        """The first bootstrap server that answers."""
        failures = []
        for address in self.settings.bootstrap_servers.split(","):
            host, _, port = address.strip().rpartition(":")
            try:
                return self._connect(host or "localhost", int(port or 9092))
            except ValueError:
                failures.append(f"{address} is not HOST:PORT")
            except KafkaFailure as exc:
                if "authentication failed" in str(exc) or "TLS" in str(exc):
                    raise
                failures.append(str(exc))
        if len(failures) == 1:
            raise KafkaFailure(failures[0])
        raise KafkaFailure(f"no broker answered at {self.settings.bootstrap_servers}")

    def coordinator(self, group_id: str) -> Connection:
        """The connection to the group's coordinator (FindCoordinator)."""
        connection = self.any_broker()
        version = connection.version_of(ApiKey.FIND_COORDINATOR, (4, 5, 6))
        body = make(
            request_type(ApiKey.FIND_COORDINATOR, version),
            key_type=KEY_TYPE_GROUP,
            coordinator_keys=(group_id,),
        )
        (found,) = connection.call(body).coordinators
        if found.error_code != ErrorCode.none:
            why = found.error_message or found.error_code.name
            raise KafkaFailure(f"no coordinator for group {group_id}: {why}")
        return self._connect(found.host, found.port)

    def _connect(self, host: str, port: int) -> Connection:
        key = (host, port)
        if key not in self._connections:
            self._connections[key] = Connection(host, port, self.settings)
        return self._connections[key]


def _tls_context(settings: ClientSettings) -> ssl.SSLContext:
    """Verifies the broker against --ssl-cafile (else the system's CAs); a client certificate for mTLS."""
    try:
        context = ssl.create_default_context(cafile=settings.ssl_cafile)
        if settings.ssl_certfile:
            context.load_cert_chain(
                settings.ssl_certfile, settings.ssl_keyfile, settings.ssl_keyfile_password
            )
    except (OSError, ssl.SSLError) as exc:
        raise KafkaFailure(f"cannot load the TLS files: {_reason(exc)}") from None
    return context


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return f"TLS: {exc.reason or exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__

"""TLS for the SSL and SASL_SSL listeners: one ssl.SSLContext per listener from the ssl_* settings, and the
principal of a connection's verified client certificate (docs/security.md, "TLS").

The settings are checked when the broker starts, before it opens a port: a TLS listener without a
certificate, a file that cannot be read, a wrong key password, an unknown ssl_client_auth or a bad
mapping rule stops the start with a sentence saying what to change (TlsSetupError).
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Callable

from ...config import Listener, Settings
from ...security.certificate import subject_dn
from ...security.principal import MappingRule, parse_rules, principal_for
from .session import ANONYMOUS

# ssl_client_auth, with Kafka's ssl.client.auth values.
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


class TlsSetupError(ValueError):
    """The TLS settings cannot serve a TLS listener; the message says which and why."""


def _readable(setting: str, path: str) -> None:
    if not os.path.isfile(path):
        raise TlsSetupError(f"{setting} {path!r}: no such file")
    if not os.access(path, os.R_OK):
        raise TlsSetupError(f"{setting} {path!r}: the broker may not read it")


def _no_password() -> str:
    # Without a callable OpenSSL would prompt on the terminal for an encrypted key's password.
    raise TlsSetupError("ssl_keyfile is encrypted: set ssl_keyfile_password")


def client_auth_mode(settings: Settings) -> ssl.VerifyMode:
    mode = CLIENT_AUTH.get(settings.ssl_client_auth.strip().lower())
    if mode is None:
        raise TlsSetupError(
            f"ssl_client_auth {settings.ssl_client_auth!r}: use one of {', '.join(CLIENT_AUTH)}"
        )
    return mode


def server_context(settings: Settings, listener: Listener) -> ssl.SSLContext:
    """The TLS side of one listener: the broker's certificate, TLS 1.2 or later, and on SSL listeners
    client certificates asked for (requested) or demanded (required) and checked against ssl_cafile."""
    where = f"listener {listener.protocol}://{listener.host}:{listener.port}"
    # As in Kafka (KIP-684), ssl_client_auth is the SSL listener's: a SASL_SSL client proves who it is
    # by logging in, and is not asked for a certificate.
    mode = client_auth_mode(settings) if listener.protocol == "SSL" else ssl.CERT_NONE
    if not settings.ssl_certfile:
        raise TlsSetupError(
            f"{where} needs the broker's certificate: set ssl_certfile (and ssl_keyfile, unless the "
            "certificate file holds the key too)"
        )
    _readable("ssl_certfile", settings.ssl_certfile)
    if settings.ssl_keyfile:
        _readable("ssl_keyfile", settings.ssl_keyfile)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(
            settings.ssl_certfile, settings.ssl_keyfile, settings.ssl_keyfile_password or _no_password
        )
    except ssl.SSLError as exc:
        hint = " (is ssl_keyfile_password right?)" if settings.ssl_keyfile_password else ""
        raise TlsSetupError(
            f"{where}: cannot load the certificate {settings.ssl_certfile!r} with its key "
            f"{settings.ssl_keyfile or settings.ssl_certfile!r}{hint}: {exc.reason or exc}"
        ) from None
    if mode != ssl.CERT_NONE and not settings.ssl_cafile:
        raise TlsSetupError(
            f"ssl_client_auth {settings.ssl_client_auth}: set ssl_cafile to the CA that signs client "
            "certificates"
        )
    if settings.ssl_cafile:
        _readable("ssl_cafile", settings.ssl_cafile)
        try:
            context.load_verify_locations(cafile=settings.ssl_cafile)
        except ssl.SSLError as exc:
            raise TlsSetupError(
                f"ssl_cafile {settings.ssl_cafile!r} holds no readable CA certificate: {exc.reason or exc}"
            ) from None
    context.verify_mode = mode
    return context


def server_contexts(settings: Settings, listeners: list[Listener]) -> dict[str, ssl.SSLContext]:
    """An SSLContext for each TLS listener, by protocol; TlsSetupError when the settings cannot serve one."""
    client_auth_mode(settings)
    try:
        parse_rules(settings.ssl_principal_mapping_rules)
    except ValueError as exc:
        raise TlsSetupError(str(exc)) from None
    return {listener.protocol: server_context(settings, listener) for listener in listeners if listener.tls}


def handshake_timeout(settings: Settings) -> float:
    if settings.ssl_handshake_timeout_ms <= 0:
        raise TlsSetupError("ssl_handshake_timeout_ms must be positive")
    return settings.ssl_handshake_timeout_ms / 1000


def certificate_principals(settings: Settings) -> Callable[[asyncio.StreamWriter], str]:
    """What names a TLS connection's principal: its verified client certificate's subject through
    ssl_principal_mapping_rules, or ANONYMOUS without one. Raises ValueError (NoMatchingRule) when no
    rule applies: Kafka closes such a connection."""
    rules = parse_rules(settings.ssl_principal_mapping_rules)

    def principal(writer: asyncio.StreamWriter) -> str:
        return peer_principal(writer, rules)

    return principal


def peer_principal(writer: asyncio.StreamWriter, rules: tuple[MappingRule, ...]) -> str:
    ssl_object = writer.get_extra_info("ssl_object")
    if ssl_object is None:
        return ANONYMOUS
    # The TLS library has verified any certificate the client sent (client auth requested or required);
    # with ssl_client_auth none no certificate is asked for.
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return ANONYMOUS
    return principal_for(rules, subject_dn(der))

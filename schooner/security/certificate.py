"""The subject of an X.509 certificate (DER bytes) as an RFC 2253 distinguished name, the string Kafka's
ssl.principal.mapping.rules work on: "CN=alice,OU=clients,O=Schooner".

RFC 2253 writes the subject's relative names last first, joins them with ",", and the values of a
multi-valued one with "+". An attribute with a short name in RFC 2253 (CN, L, ST, O, OU, C, STREET, DC,
UID) and a string value is written NAME=value, with the special characters escaped; any other attribute
is written as its dotted OID and "#" and the hex of its DER value (as Java's X500Principal does, which
Kafka uses). Only the parts of DER a certificate's subject needs are read here: no signature is checked
(the TLS library has verified the certificate before anyone asks for its subject).
"""

from __future__ import annotations

from dataclasses import dataclass

_SEQUENCE, _SET, _OID, _INTEGER = 0x30, 0x31, 0x06, 0x02
_VERSION = 0xA0  # tbsCertificate's [0] EXPLICIT version
# RFC 2253's short names.
KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.6": "C",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
# DER string types and how their bytes decode.
_STRINGS = {
    0x0C: "utf-8",  # UTF8String
    0x13: "ascii",  # PrintableString
    0x14: "latin-1",  # TeletexString (T61), read as Latin-1 as most libraries do
    0x16: "ascii",  # IA5String
    0x1B: "latin-1",  # GeneralString
    0x1C: "utf-32-be",  # UniversalString
    0x1E: "utf-16-be",  # BMPString
}
_SPECIAL = ',+"\\<>;'  # escaped with a backslash wherever they appear


class CertificateError(ValueError):
    """The bytes are not a certificate this module can read."""


@dataclass(frozen=True, slots=True)
class _Element:
    tag: int
    start: int  # where the element's header starts
    body: int  # where its content starts
    end: int  # where it ends


def _element(data: bytes, pos: int, end: int) -> _Element:
    if pos + 2 > end:
        raise CertificateError("truncated DER element")
    tag, first = data[pos], data[pos + 1]
    if tag & 0x1F == 0x1F:
        raise CertificateError("multi-byte DER tags do not occur in a certificate's subject")
    body = pos + 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or body + count > end:
            raise CertificateError("bad DER length")
        length = int.from_bytes(data[body : body + count], "big")
        body += count
    if body + length > end:
        raise CertificateError("DER element runs past its parent")
    return _Element(tag, pos, body, body + length)


def _children(data: bytes, parent: _Element) -> list[_Element]:
    found, pos = [], parent.body
    while pos < parent.end:
        child = _element(data, pos, parent.end)
        found.append(child)
        pos = child.end
    return found


def _expect(element: _Element, tag: int, what: str) -> _Element:
    if element.tag != tag:
        raise CertificateError(f"{what}: expected DER tag {tag:#x}, found {element.tag:#x}")
    return element


def oid_text(content: bytes) -> str:
    """An OBJECT IDENTIFIER's content octets as dotted numbers."""
    numbers: list[int] = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            numbers.append(value)
            value = 0
    if not numbers or content[-1] & 0x80:
        raise CertificateError("bad OBJECT IDENTIFIER")
    first = numbers[0]
    head = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    return ".".join(str(n) for n in [*head, *numbers[1:]])


def escape_value(value: str) -> str:
    """A string attribute value as RFC 2253 writes it."""
    out = []
    for i, ch in enumerate(value):
        if ch in _SPECIAL or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " "):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):02X}")
        else:
            out.append(ch)
    return "".join(out)


def _attribute(data: bytes, element: _Element) -> str:
    parts = _children(data, _expect(element, _SEQUENCE, "AttributeTypeAndValue"))
    if len(parts) != 2:
        raise CertificateError("AttributeTypeAndValue must hold a type and a value")
    kind, value = parts
    oid = oid_text(data[_expect(kind, _OID, "attribute type").body : kind.end])
    keyword = KEYWORDS.get(oid)
    encoding = _STRINGS.get(value.tag)
    if keyword is not None and encoding is not None:
        try:
            return f"{keyword}={escape_value(data[value.body : value.end].decode(encoding))}"
        except UnicodeDecodeError as exc:
            raise CertificateError(f"attribute {keyword}: {exc}") from None
    return f"{keyword or oid}=#{data[value.start : value.end].hex()}"


def name_dn(data: bytes, name: _Element) -> str:
    """An X.501 Name (a SEQUENCE OF RDN) as an RFC 2253 string."""
    rdns = []
    for rdn in _children(data, _expect(name, _SEQUENCE, "Name")):
        values = [
            _attribute(data, ava) for ava in _children(data, _expect(rdn, _SET, "RelativeDistinguishedName"))
        ]
        rdns.append("+".join(values))
    return ",".join(reversed(rdns))


def subject_dn(der: bytes) -> str:
    """The subject of a DER-encoded certificate, in RFC 2253 form."""
    parts = _children(der, _expect(_element(der, 0, len(der)), _SEQUENCE, "Certificate"))
    if not parts:
        raise CertificateError("an empty Certificate")
    tbs_children = _children(der, _expect(parts[0], _SEQUENCE, "TBSCertificate"))
    fields = tbs_children[1:] if tbs_children and tbs_children[0].tag == _VERSION else tbs_children
    # serialNumber, signature, issuer, validity, subject
    if len(fields) < 5:
        raise CertificateError("TBSCertificate is missing fields")
    _expect(fields[0], _INTEGER, "serialNumber")
    return name_dn(der, fields[4])

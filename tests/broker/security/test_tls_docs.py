"""docs/security.md's TLS section does what it says: its openssl steps make certificates a broker and a
client use, its example settings serve mutual TLS, and its mapping table is what the rules give."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from schooner.security.principal import parse_rules, principal_for

from .tls_helpers import expect_principals

DOCS = Path(__file__).resolve().parents[3] / "docs"


def tls_section() -> str:
    text = (DOCS / "security.md").read_text()
    start = text.index("## TLS")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def test_the_openssl_steps_and_the_example_settings_serve_mutual_tls(
    broker_factory: Any, tmp_path: Path
) -> None:
    section = tls_section()
    (steps,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    done = subprocess.run(
        ["bash", "-e", "-c", steps], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "broker.crt: OK" in done.stdout and "alice.crt: OK" in done.stdout
    assert "subject=CN=alice,OU=clients,O=Example" in done.stdout

    example = tomllib.loads(re.findall(r"```toml\n(.*?)```", section, re.S)[0])
    protocols = [item.partition("://")[0] for item in example.pop("listeners")]
    example.pop("advertised_listeners")  # broker1.example.com is no host here
    for name in ("ssl_certfile", "ssl_keyfile", "ssl_cafile"):
        example[name] = str(tmp_path / Path(example[name]).name)
    b = broker_factory(listeners=[f"{protocol}://127.0.0.1:0" for protocol in protocols], **example)
    client = {
        "bootstrap.servers": f"127.0.0.1:{b.broker.port_of('SSL')}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(tmp_path / "ca.crt"),
        "ssl.certificate.location": str(tmp_path / "alice.crt"),
        "ssl.key.location": str(tmp_path / "alice-encrypted.key"),
        "ssl.key.password": "change-me",
    }
    producer = Producer(client)
    producer.produce("from-the-docs", b"hello", partition=0)
    assert producer.flush(10) == 0
    expect_principals(b, {"User:alice"}, producer)


def test_the_mapping_table() -> None:
    section = tls_section()
    table = section[section.index("| rules | subject | principal |") :].split("\n\n")[0]
    rows = [re.findall(r"`([^`]*)`|(the same)", line) for line in table.splitlines()[2:]]
    rules = ""
    for row in rows:
        cells = [code or same for code, same in row]
        rules = rules if cells[0] == "the same" else cells[0]
        subject, principal = cells[1], cells[2]
        assert principal_for(parse_rules(rules), subject) == principal
    assert len(rows) == 4

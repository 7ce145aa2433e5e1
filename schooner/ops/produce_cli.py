"""`schooner produce TOPIC`: one record per line of stdin (or one from a file), as kcat -P does."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from typing import BinaryIO

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from .client_options import ClientSettings, with_client_options
from .kafka.produce import Headers, Record, Sender, Tally
from .registry_client import registry_of, with_registry_client_options
from .serde import RAW, EncodeError, Encoder, Field, format_option

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
PROGRESS_AFTER = 1000  # lines read before a progress bar appears: small runs print only the summary


def parse_headers(values: tuple[str, ...]) -> Headers:
    """`name=value` options as Kafka headers, in order, duplicates kept."""
    out: Headers = []
    for pair in values:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r} is not name=value", param_hint="--header")
        out.append((name, value.encode()))
    return out


def unescape(separator: str) -> bytes:
    """`\\t` and `\\n` as typed on a command line, for --key-separator."""
    return separator.replace("\\t", "\t").replace("\\n", "\n").encode()


def lines(stream: BinaryIO) -> Iterator[bytes]:
    """Each line without its newline; a last line without one is a record too."""
    for line in stream:
        yield line[:-1] if line.endswith(b"\n") else line


@click.command()
@click.argument("topic")
@click.option("--key", "-k", help="The key of every record.")
@click.option(
    "--key-separator",
    "-K",
    metavar="SEP",
    help="Each line is KEY SEP VALUE (split at the first SEP; a line without it has no key).",
)
@click.option("--header", "-H", "headers", multiple=True, metavar="NAME=VALUE", help="A header; repeatable.")
@click.option("--partition", "-p", type=click.IntRange(min=0), help="Only this partition.")
@click.option(
    "--value-file",
    type=click.Path(exists=True, dir_okay=False),
    help="Send this file's bytes as one record, instead of reading stdin.",
)
@click.option("--acks", type=click.Choice(["0", "1", "all"]), help="Acknowledgements to wait for [all].")
@click.option("--compression", "-z", type=click.Choice(COMPRESSIONS), help="Batch compression [none].")
@format_option("key")
@format_option("value")
@click.option(
    "--key-schema",
    type=click.Path(exists=True, dir_okay=False),
    help="The keys' schema, registered as TOPIC-key [the subject's latest version].",
)
@click.option(
    "--value-schema",
    type=click.Path(exists=True, dir_okay=False),
    help="The values' schema, registered as TOPIC-value [the subject's latest version].",
)
@with_registry_client_options
@with_client_options
def produce(
    topic: str,
    key: str | None,
    key_separator: str | None,
    headers: tuple[str, ...],
    partition: int | None,
    value_file: str | None,
    acks: str | None,
    compression: str | None,
    key_format: str,
    value_format: str,
    key_schema: str | None,
    value_schema: str | None,
    registry_url: str,
    registry_user: str | None,
    registry_password: str | None,
    client: ClientSettings,
) -> None:
    """Sends each line of stdin to TOPIC as one record, then prints on stderr how many records and
    bytes reached which partitions. Exits 1 when any record was not acknowledged.

    With --value-format avro, json or protobuf each value is a JSON text, encoded in the schema
    registry's wire format with --value-schema's schema (registered under TOPIC-value) or the latest
    version of TOPIC-value; Protobuf takes the file's first message. --key-format likewise for keys. A
    line that does not fit the schema fails as a record that was not acknowledged would.

    \b
      seq 3 | schooner produce orders
      printf 'k1\\tv1\\n' | schooner produce orders -K '\\t' -H source=cli
      schooner produce images --value-file photo.png -k photo
      echo '{"id": 1}' | schooner produce orders --value-format avro --value-schema order.avsc
    """
    if key is not None and key_separator is not None:
        raise click.UsageError("give --key or --key-separator, not both")
    if key_separator == "":
        raise click.BadParameter("must not be empty", param_hint="--key-separator")
    key_format, value_format = key_format.lower(), value_format.lower()
    for name, fmt, schema in (("key", key_format, key_schema), ("value", value_format, value_schema)):
        if schema is not None and fmt == RAW:
            raise click.UsageError(f"--{name}-schema needs --{name}-format avro, json or protobuf")
    extra = parse_headers(headers)
    sender = Sender(client, topic, partition, acks, compression)  # the topic exists before any registering
    registry = registry_of(
        registry_url, registry_user, registry_password, client.sasl_username, client.sasl_password
    )
    encoders = [
        None if fmt == RAW else Encoder(registry, Field(topic, is_key), fmt, _read(schema))
        for is_key, fmt, schema in ((True, key_format, key_schema), (False, value_format, value_schema))
    ]
    for encoder in encoders:
        if encoder is not None:
            what = f"{encoder.field.name}s"
            used = encoder.used
            click.echo(
                f"{what} as {used.subject} version {used.version}, schema id {used.schema_id}", err=True
            )
    encode_key, encode_value = encoders
    fixed_key = None if key is None else key.encode()
    if fixed_key is not None and encode_key is not None:
        try:
            fixed_key = encode_key(fixed_key)
        except EncodeError as exc:
            raise click.BadParameter(str(exc), param_hint="--key") from None

    def send(k: bytes | None, v: bytes, where: str, *, key_done: bool = False) -> None:
        try:
            if k is not None and not key_done and encode_key is not None:
                k = encode_key(k)
            record = Record(k, v if encode_value is None else encode_value(v), extra)
        except EncodeError as exc:
            sender.reject(f"{where}: {exc}")
            return
        sender.send(record)

    if value_file is not None:
        with open(value_file, "rb") as f:
            send(fixed_key, f.read(), value_file, key_done=True)
    else:
        sep = None if key_separator is None else unescape(key_separator)
        progress = _Progress(topic, sys.stdin.buffer)
        try:
            for number, line in enumerate(lines(sys.stdin.buffer), 1):
                if sep is None:
                    send(fixed_key, line, f"line {number}", key_done=True)
                else:
                    k, found, v = line.partition(sep)
                    if found:
                        send(k, v, f"line {number}")
                    else:
                        send(None, line, f"line {number}")
                progress.advance(len(line) + 1, sender.tally)
        finally:
            progress.close()
    _report(topic, sender.finish())


def _read(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}") from None


class _Progress:
    """A rich progress bar on stderr for bulk produce: only when stdin is not a terminal, stderr is one,
    and more than PROGRESS_AFTER lines came. Stdin redirected from a file gives a bar in bytes; a pipe,
    a counter."""

    def __init__(self, topic: str, stream: BinaryIO) -> None:
        self.topic = topic
        self.console = Console(stderr=True)
        self.wanted = not stream.isatty() and self.console.is_terminal
        info = os.fstat(stream.fileno()) if self.wanted else None
        self.total = info.st_size if info is not None and stat.S_ISREG(info.st_mode) else None
        self.read = 0
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def advance(self, size: int, tally: Tally) -> None:
        self.read += size
        if not self.wanted or tally.sent < PROGRESS_AFTER or tally.sent % 256:
            return  # updating the bar for every record would cost more than producing it
        if self.bar is None:
            self.bar = Progress(
                TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                console=self.console, transient=True,
            )  # fmt: skip
            self.bar.start()
            self.task = self.bar.add_task("", total=self.total)
        assert self.task is not None
        self.bar.update(
            self.task,
            completed=self.read if self.total is not None else tally.sent,
            description=f"{self.topic}: {tally.sent} records sent, {tally.delivered} acknowledged",
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _report(topic: str, tally: Tally) -> None:
    """The summary on stderr; any failure is the one error line instead, and exit status 1."""
    if tally.failed:
        raise click.ClickException(
            f"{tally.failed} of {tally.sent} records failed ({tally.first_error}); {tally.delivered} produced"
        )
    where = ", ".join(map(str, sorted(tally.partitions))) or "none"
    plural = "" if tally.delivered == 1 else "s"
    click.echo(
        f"produced {tally.delivered} record{plural} ({tally.bytes} bytes) to {topic}, partitions {where}",
        err=True,
    )

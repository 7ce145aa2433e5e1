"""`schooner consume TOPIC`: records to stdout, as kcat -C does; follows the topic until Ctrl-C."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import click

from .client_options import ClientSettings, with_client_options
from .kafka import KafkaFailure
from .kafka.consume import Reader, Start, parse_timestamp
from .kafka.formats import BINARY, JSON, Consumed, FormatError, as_json, compile_format, data_json
from .registry_client import RegistryFailure, registry_of, with_registry_client_options
from .serde import RAW, DecodeError, Decoder, format_option


def _start(from_beginning: bool, offset: int | None, timestamp: str | None) -> Start:
    if sum((from_beginning, offset is not None, timestamp is not None)) > 1:
        raise click.UsageError("give one of --from-beginning, --offset and --timestamp")
    if from_beginning:
        return Start("beginning")
    if offset is not None:
        return Start("offset", offset)
    if timestamp is not None:
        try:
            return Start("timestamp", parse_timestamp(timestamp))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--timestamp") from None
    return Start("end")


@click.command()
@click.argument("topic")
@click.option("--from-beginning", is_flag=True, help="Start at each partition's first record.")
@click.option(
    "--offset",
    "-o",
    type=int,
    help="Start at this offset (with --partition), or, when negative, this many records before the end.",
)
@click.option("--timestamp", metavar="MS|ISO", help="Start at the first record at or after this time.")
@click.option(
    "--partition",
    "-p",
    "partitions",
    type=click.IntRange(min=0),
    multiple=True,
    help="Only this partition; repeatable.",
)
@click.option("--group", "-g", help="Read as a member of this consumer group, which commits its offsets.")
@click.option("--max-messages", "-c", type=click.IntRange(min=1), help="Stop after this many records.")
@click.option(
    "--timeout", type=click.FloatRange(min=0), help="Stop after this many seconds without a record."
)
@click.option(
    "--exit", "-e", "stop_at_end", is_flag=True, help="Stop at the end of the partitions (kcat -e)."
)
@click.option(
    "--format",
    "-f",
    "fmt",
    default="value",
    show_default=True,
    help="value, kv (key TAB value), json (one object per record), or a format string: %t topic, "
    "%p partition, %o offset, %k key, %s value, %h headers, %T timestamp, %K/%S key/value size.",
)
@click.option(
    "--binary",
    type=click.Choice(BINARY),
    default="base64",
    show_default=True,
    help="How --format json gives bytes that are not UTF-8 (and decoded Avro bytes).",
)
@format_option("key")
@format_option("value")
@with_registry_client_options
@with_client_options
def consume(
    topic: str,
    from_beginning: bool,
    offset: int | None,
    timestamp: str | None,
    partitions: tuple[int, ...],
    group: str | None,
    max_messages: int | None,
    timeout: float | None,
    stop_at_end: bool,
    fmt: str,
    binary: str,
    key_format: str,
    value_format: str,
    registry_url: str,
    registry_user: str | None,
    registry_password: str | None,
    client: ClientSettings,
) -> None:
    """Prints TOPIC's records as they come (new ones only, unless told where to start), until Ctrl-C,
    --max-messages, --timeout or --exit; then the count on stderr.

    With --value-format avro, json or protobuf each value is decoded with the schema its schema id names
    (fetched from --registry) and printed as JSON, where --format puts the value; --key-format likewise.
    A record that does not decode is an error line on stderr, and reading goes on.

    \b
      schooner consume orders --from-beginning --exit
      schooner consume orders -o -5 -f '%p:%o %k=%s\\n'
      schooner consume orders -g billing -f json --timestamp 2026-01-31T12:00
      schooner consume orders --value-format avro --from-beginning --exit
    """
    start = _start(from_beginning, offset, timestamp)
    if fmt == JSON:
        render = None
    else:
        try:
            render = compile_format(fmt)
        except FormatError as exc:
            raise click.BadParameter(str(exc), param_hint="--format") from None
    registry = registry_of(
        registry_url, registry_user, registry_password, client.sasl_username, client.sasl_password
    )
    decoders = {
        name: Decoder(registry, chosen.lower())
        for name, chosen in (("key", key_format), ("value", value_format))
        if chosen.lower() != RAW
    }
    show = _shown(render, binary, decoders)
    reader = Reader(client, topic, list(partitions) or None, group, start, stop_at_end)
    # Ctrl-C and `kill` end the loop at its next poll rather than raising wherever the signal lands:
    # a KeyboardInterrupt inside the client's rebalance callbacks could leave close() waiting.
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda signum, frame: stop.set())
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    out = sys.stdout.buffer
    count = undecoded = 0
    flushed = time.monotonic()
    try:
        for record in reader.records(max_messages, timeout, stop.is_set):
            if record is not None:
                count += 1
                try:
                    out.write(show(record))
                except DecodeError as exc:
                    undecoded += 1
                    click.echo(f"error: cannot decode {exc}", err=True)
            # What was read shows within a fraction of a second, even through a pipe, without a write
            # call per record when many come at once.
            if record is None or time.monotonic() - flushed > 0.2:
                out.flush()
                flushed = time.monotonic()
        out.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # `| head`: nothing to flush at exit
    except (KafkaFailure, RegistryFailure):
        reader.close()
        raise
    reader.close()
    failed = f" ({undecoded} not decoded)" if undecoded else ""
    click.echo(f"consumed {count} record{'' if count == 1 else 's'} from {topic}{failed}", err=True)


def _shown(
    render: Callable[[Consumed], bytes] | None, binary: str, decoders: dict[str, Decoder]
) -> Callable[[Consumed], bytes]:
    """What is printed of a record: the format string's bytes, or a JSON line; with a key or value
    decoded (as one line of JSON) where the format puts it. DecodeError for one that does not decode."""

    def show(record: Consumed) -> bytes:
        decoded = {}
        for name, decode in decoders.items():
            try:
                decoded[name] = decode(getattr(record, name))
            except DecodeError as exc:
                raise DecodeError(
                    f"the {name} of {record.topic}-{record.partition} offset {record.offset}: {exc}"
                ) from None
        if render is None:
            return as_json(record, binary, decoded).encode() + b"\n"

        def text(name: str, raw: bytes | None) -> bytes | None:
            # Decoded, each key or value is one JSON text: a null one too (a tombstone prints `null`).
            return data_json(decoded[name], binary).encode() if name in decoded else raw

        return render(replace(record, key=text("key", record.key), value=text("value", record.value)))

    return show

"""`schooner consume TOPIC`: records to stdout, as kcat -C does; follows the topic until Ctrl-C."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import click

from .client_options import ClientSettings, with_client_options
from .kafka import KafkaFailure
from .kafka.consume import Reader, Start, parse_timestamp
from .kafka.formats import BINARY, JSON, FormatError, as_json, compile_format


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
    help="How --format json gives bytes that are not UTF-8.",
)
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
    client: ClientSettings,
) -> None:
    """Prints TOPIC's records as they come (new ones only, unless told where to start), until Ctrl-C,
    --max-messages, --timeout or --exit; then the count on stderr.

    \b
      schooner consume orders --from-beginning --exit
      schooner consume orders -o -5 -f '%p:%o %k=%s\\n'
      schooner consume orders -g billing -f json --timestamp 2026-01-31T12:00
    """
    start = _start(from_beginning, offset, timestamp)
    if fmt == JSON:
        render = None
    else:
        try:
            render = compile_format(fmt)
        except FormatError as exc:
            raise click.BadParameter(str(exc), param_hint="--format") from None
    reader = Reader(client, topic, list(partitions) or None, group, start, stop_at_end)
    # Ctrl-C and `kill` end the loop at its next poll rather than raising wherever the signal lands:
    # a KeyboardInterrupt inside the client's rebalance callbacks could leave close() waiting.
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda signum, frame: stop.set())
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    out = sys.stdout.buffer
    count = 0
    flushed = time.monotonic()
    try:
        for record in reader.records(max_messages, timeout, stop.is_set):
            if record is not None:
                out.write(render(record) if render else as_json(record, binary).encode() + b"\n")
                count += 1
            # What was read shows within a fraction of a second, even through a pipe, without a write
            # call per record when many come at once.
            if record is None or time.monotonic() - flushed > 0.2:
                out.flush()
                flushed = time.monotonic()
        out.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # `| head`: nothing to flush at exit
    except KafkaFailure:
        reader.close()
        raise
    reader.close()
    click.echo(f"consumed {count} record{'' if count == 1 else 's'} from {topic}", err=True)

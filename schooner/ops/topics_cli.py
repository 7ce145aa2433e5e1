"""`schooner topics`: list, create, describe, alter and delete topics as a Kafka client (any broker
the client options reach), and `repair`, a chore run straight against Redis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from ..storage.blocking_store import BlockingStore
from ..storage.topics.config import TABLE_FORMAT, TABLE_KEY_MODE, TABLE_VALUE_MODE
from .client_options import ClientSettings, with_client_options
from .kafka import admin_client
from .kafka import topics as kafka_topics
from .output import emit, emit_object, with_output_option
from .redis_options import redis_url_of, with_redis_options


@click.group()
def topics() -> None:
    """Topics: list, create, describe, alter, delete (as a Kafka client), and repair (on Redis)."""


def key_values(values: Sequence[str], option: str) -> dict[str, str]:
    """`k=v` strings (repeated options) as a dict; one without `=` is a usage error naming the option."""
    out: dict[str, str] = {}
    for pair in values:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not key=value", param_hint=option)
        out[key.strip()] = value
    return out


@topics.command("list")
@with_output_option
@with_client_options
def list_topics(client: ClientSettings, output: str) -> None:
    """Every topic with its partition count."""
    rows = kafka_topics.list_topics(client)
    emit(rows, ["topic", "partitions", "replication_factor"], output, headers={"replication_factor": "RF"})


@topics.command("create")
@click.argument("topic")
@click.option("--partitions", "-p", type=click.IntRange(min=1), help="Partitions (default: the broker's).")
@click.option(
    "--config", "-c", "configs", multiple=True, metavar="KEY=VALUE", help="A topic config; repeatable."
)
@click.option("--if-not-exists", is_flag=True, help="Succeed when the topic exists already.")
@with_output_option
@with_client_options
def create(
    topic: str,
    partitions: int | None,
    configs: tuple[str, ...],
    if_not_exists: bool,
    client: ClientSettings,
    output: str,
) -> None:
    """Creates TOPIC, for example `schooner topics create orders -p 6 -c retention.ms=86400000`."""
    settings = key_values(configs, "--config")
    created = kafka_topics.create(client, topic, partitions or -1, settings, if_not_exists)
    _done({"topic": topic, "created": created}, output, f"created {topic}" if created else f"{topic} exists")


@topics.command("describe")
@click.argument("topic")
@click.option("--all-configs", is_flag=True, help="Every config, not only those set on the topic.")
@with_output_option
@with_client_options
def describe(topic: str, all_configs: bool, client: ClientSettings, output: str) -> None:
    """TOPIC's partitions (leader, earliest and latest offsets) and the configs set on it. A tiered topic
    (remote.storage.enable) also shows where Redis starts (local_earliest) and the first offset not yet
    archived to the cold tier (pending_upload), and its cold-tier table: format, key and value modes."""
    found = kafka_topics.describe_topic(client, topic, all_configs)
    if found["tiered"]:
        found["table"] = table_of(client, topic)
    if output == "json":
        emit_object(found, output)
        return
    columns = ["partition", "leader", "replicas", "earliest", "latest", "records"]
    if found[
        "tiered"
    ]:  # the cold tier from earliest, Redis from local_earliest; archived below pending_upload
        columns[4:4] = ["local_earliest", "pending_upload"]
    partitions = [{**p, "replicas": ",".join(map(str, p["replicas"]))} for p in found["partitions"]]
    emit(partitions, columns, output, title=topic)
    if "table" in found:
        click.echo(table_line(found["table"]))
    if found["configs"]:
        emit(found["configs"], ["name", "value", "source"], output, title="configs")
    else:
        click.echo("no configs set on the topic (--all-configs shows the defaults)")


def table_of(client: ClientSettings, topic: str) -> dict[str, str]:
    """A tiered topic's cold-tier table (schooner.table.*, fixed at creation), from DescribeConfigs."""
    every = {c["name"]: c["value"] for c in kafka_topics.topic_configs(admin_client(client), client, topic)}
    names = {"format": TABLE_FORMAT, "key_mode": TABLE_KEY_MODE, "value_mode": TABLE_VALUE_MODE}
    return {field: every.get(name) or "-" for field, name in names.items()}


def table_line(table: dict[str, str]) -> str:
    """`table: iceberg (key raw, value schema_id_prefix)`."""
    return f"table: {table['format']} (key {table['key_mode']}, value {table['value_mode']})"


@topics.command("alter")
@click.argument("topic")
@click.option("--set", "set_configs", multiple=True, metavar="KEY=VALUE", help="Set a config; repeatable.")
@click.option(
    "--delete", "delete_configs", multiple=True, metavar="KEY", help="Back to the default; repeatable."
)
@click.option("--partitions", type=click.IntRange(min=1), help="Raise the partition count to N.")
@with_output_option
@with_client_options
def alter(
    topic: str,
    set_configs: tuple[str, ...],
    delete_configs: tuple[str, ...],
    partitions: int | None,
    client: ClientSettings,
    output: str,
) -> None:
    """Changes TOPIC's configs (other configs stay as they are) or raises its partition count."""
    if not (set_configs or delete_configs or partitions):
        raise click.UsageError("nothing to change: give --set, --delete or --partitions")
    changed = kafka_topics.alter(client, topic, key_values(set_configs, "--set"), delete_configs, partitions)
    _done({"topic": topic, "changed": changed}, output, f"{topic}: " + ", ".join(changed))


@topics.command("delete")
@click.argument("topic")
@click.option("--if-exists", is_flag=True, help="Succeed when there is no such topic.")
@with_output_option
@with_client_options
def delete(topic: str, if_exists: bool, client: ClientSettings, output: str) -> None:
    """Deletes TOPIC and its records."""
    deleted = kafka_topics.delete(client, topic, if_exists)
    _done(
        {"topic": topic, "deleted": deleted}, output, f"deleted {topic}" if deleted else f"no topic {topic}"
    )


def _done(obj: dict[str, Any], output: str, sentence: str) -> None:
    if output == "json":
        emit_object(obj, output)
    else:
        click.echo(sentence)


@topics.command("repair")
@click.argument("topic")
@click.option("--partition", type=int, help="Only this partition (default: every one that needs it).")
@with_redis_options
def repair(topic: str, partition: int | None, redis_url: str | None, data_dir: str, keyspace: str) -> None:
    """Gives offsets to entries that a plain `XADD key *` added to a dense topic.

    Such an entry stops produce to its partition (KAFKA_STORAGE_ERROR). Stop the partition's plain
    Redis writers first; brokers may keep running. See docs/key-layout.md.
    """
    store = BlockingStore.connect(redis_url_of(redis_url, data_dir), keyspace)
    found = store.topic(topic)
    if found is None:
        raise click.UsageError(f"no topic {topic!r} in keyspace {keyspace!r}")
    if not found.offsets.dense:
        raise click.UsageError(f"{topic} uses the timestamp encoding, where '*' entries are valid")
    for p in [partition] if partition is not None else range(found.partitions):
        if not store.needs_repair(topic, p):
            click.echo(f"{topic}-{p}: nothing to repair")
            continue
        done = store.renumber(found, p)
        click.echo(
            f"{topic}-{p}: {done.moved} entries given offsets; the log now ends at {done.high_watermark}"
        )

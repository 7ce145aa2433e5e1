"""`schooner schemas`: subjects, versions, compatibility, config and mode of a Confluent-compatible schema
registry (the one every Schooner broker serves, or Confluent's), with confluent-kafka's client.

A refusal is the registry's own message on one line and exit status 1 (ops/registry_client.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from ..schemas import AVRO, PROTOBUF, SCHEMA_TYPES
from .output import emit, emit_object, with_output_option
from .registry_client import (
    RegistrySettings,
    answer,
    references,
    registry_errors,
    schema_type,
    with_registry_options,
)

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import RegisteredSchema, Schema

# A subject with no compatibility or mode of its own takes the global one; the registry says so with these.
_NO_SUBJECT_CONFIG, _NO_SUBJECT_MODE = 40408, 40409
_SOFT_DELETED = (40404, 40406)  # the subject, or the version, was soft-deleted already


@click.group()
def schemas() -> None:
    """Schemas in a schema registry: list, versions, get, register, check, config, mode, delete."""


def _type_option(fn: Any) -> Any:
    return click.option(
        "--type",
        "kind",
        type=click.Choice(SCHEMA_TYPES, case_sensitive=False),
        help="The schema's type [PROTOBUF for a .proto file, else AVRO].",
    )(fn)


def _reference_option(fn: Any) -> Any:
    return click.option(
        "--reference",
        "refs",
        multiple=True,
        metavar="NAME=SUBJECT:VERSION",
        help="A schema the file refers to (an Avro full name, a JSON Schema $ref, a .proto import); "
        "repeatable.",
    )(fn)


def _version(value: str, hint: str) -> int | Literal["latest"]:
    """A version number, or `latest` as the registry spells it."""
    if value == "latest":
        return "latest"
    if not value.isdigit() or int(value) < 1:
        raise click.BadParameter(f"{value!r} is neither a version number nor latest", param_hint=hint)
    return int(value)


def _read_schema(path: str, kind: str | None, refs: tuple[str, ...]) -> Schema:
    """FILE (- for stdin) as a Schema to send, its type from --type or the file's name."""
    from confluent_kafka.schema_registry import Schema

    stream = click.open_file(path, encoding="utf-8")
    try:
        text = stream.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}", param_hint="FILE") from None
    finally:
        stream.close()
    chosen = kind.upper() if kind else PROTOBUF if Path(path).suffix == ".proto" else AVRO
    return Schema(text, chosen, references(refs))


def _schema_fields(schema: Schema) -> dict[str, Any]:
    """A Schema's type, references and text, as the registry's JSON gives them."""
    return {
        "schemaType": schema_type(schema),
        "references": [r.to_dict() for r in schema.references or ()],
        "schema": schema.schema_str,
    }


def _version_doc(found: RegisteredSchema) -> dict[str, Any]:
    """A RegisteredSchema (a subject's version), as the registry's JSON gives it."""
    return {"subject": found.subject, "version": found.version, "id": found.schema_id} | _schema_fields(
        found.schema
    )


@schemas.command("list")
@click.option("--deleted", is_flag=True, help="Also the soft-deleted subjects.")
@click.option("--prefix", default=None, help="Only subjects starting with this.")
@with_output_option
@with_registry_options
def list_subjects(deleted: bool, prefix: str | None, registry: RegistrySettings, output: str) -> None:
    """Every subject."""
    client = registry.client()
    with registry_errors(registry):
        live = client.get_subjects(prefix)
        every = client.get_subjects(prefix, deleted=True) if deleted else live
    rows: list[dict[str, Any]] = [{"subject": s} for s in every]
    columns = ["subject"]
    if deleted:
        columns.append("deleted")
        shown = set(live)
        for row in rows:
            row["deleted"] = row["subject"] not in shown
    emit(rows, columns, output)


@schemas.command("versions")
@click.argument("subject")
@click.option("--deleted", is_flag=True, help="Also the soft-deleted versions.")
@with_output_option
@with_registry_options
def versions(subject: str, deleted: bool, registry: RegistrySettings, output: str) -> None:
    """SUBJECT's versions, with each one's schema id and type."""
    client = registry.client()
    with registry_errors(registry):
        live = client.get_versions(subject)
        numbers = client.get_versions(subject, deleted=True) if deleted else live
        found = [client.get_version(subject, v, deleted=True) for v in numbers]
    rows = [
        {
            "version": f.version,
            "id": f.schema_id,
            "type": schema_type(f.schema),
            "deleted": f.version not in live,
        }
        for f in found
    ]
    emit(rows, ["version", "id", "type", *(["deleted"] if deleted else [])], output)


@schemas.command("get")
@click.argument("subject", required=False)
@click.argument("version", required=False, default="latest")
@click.option("--id", "schema_id", type=click.IntRange(min=1), help="The schema of this id, instead.")
@click.option("--deleted", is_flag=True, help="A soft-deleted version too.")
@with_output_option
@with_registry_options
def get(
    subject: str | None,
    version: str,
    schema_id: int | None,
    deleted: bool,
    registry: RegistrySettings,
    output: str,
) -> None:
    """Prints the schema text of SUBJECT's VERSION (latest by default), or of --id N; what it is (subject,
    version, id, type, references) goes to stderr, so that stdout is the schema alone. --output json: the
    whole registry answer."""
    if (subject is None) == (schema_id is None):
        raise click.UsageError("give SUBJECT [VERSION] or --id N")
    client = registry.client()
    with registry_errors(registry):
        if schema_id is not None:
            doc = {"id": schema_id} | _schema_fields(client.get_schema(schema_id))
        else:
            assert subject is not None
            doc = _version_doc(client.get_version(subject, _version(version, "VERSION"), deleted=deleted))
    if output == "json":
        emit_object(doc, output)
        return
    what = [f"{doc['subject']} version {doc['version']}"] if "subject" in doc else []
    what += [f"id {doc['id']}", doc["schemaType"]]
    what += [f"{r['name']}={r['subject']}:{r['version']}" for r in doc["references"]]
    click.echo(", ".join(what), err=True)
    schema = doc["schema"] or ""
    click.echo(schema, nl=not schema.endswith("\n"))  # a .proto's own last newline ends it


@schemas.command("register")
@click.argument("subject")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@_type_option
@_reference_option
@click.option("--normalize", is_flag=True, help="Normalize the schema first (the registry's normalize=true).")
@with_output_option
@with_registry_options
def register(
    subject: str,
    file: str,
    kind: str | None,
    refs: tuple[str, ...],
    normalize: bool,
    registry: RegistrySettings,
    output: str,
) -> None:
    """Registers FILE's schema (- for stdin) under SUBJECT; prints its id and version. A schema the subject
    has already gets its id and version back; one the subject's compatibility refuses fails with the
    registry's reasons."""
    schema = _read_schema(file, kind, refs)
    client = registry.client()
    with registry_errors(registry):
        done = client.register_schema_full_response(subject, schema, normalize_schemas=normalize)
    emit_object({"subject": subject, "id": done.schema_id, "version": done.version}, output)


@schemas.command("check")
@click.argument("subject")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@_type_option
@_reference_option
@click.option(
    "--version",
    "version",
    help="Against this version (or latest) only [every version the subject's compatibility level names].",
)
@with_output_option
@with_registry_options
def check(
    subject: str,
    file: str,
    kind: str | None,
    refs: tuple[str, ...],
    version: str | None,
    registry: RegistrySettings,
    output: str,
) -> None:
    """Whether FILE's schema could be registered under SUBJECT: prints `compatible`, or `incompatible` and
    the registry's reasons, one a line, and exits 1."""
    schema = _read_schema(file, kind, refs)
    # SchemaRegistryClient.test_compatibility answers True or False; the reasons need the request itself.
    path = f"/compatibility/subjects/{_quote(subject)}/versions"
    if version is not None:
        path += f"/{_version(version, '--version')}"
    with registry_errors(registry), registry.http() as http:
        found = answer(http.post(path, params={"verbose": "true"}, json=schema.to_dict()))
    compatible = bool(found.get("is_compatible"))
    messages = [str(m) for m in found.get("messages") or ()]
    if output == "json":
        emit_object({"subject": subject, "is_compatible": compatible, "messages": messages}, output)
    else:
        click.echo("compatible" if compatible else "incompatible")
        for message in messages:
            click.echo(f"  {message}")
    if not compatible:
        raise SystemExit(1)


def _quote(subject: str) -> str:
    from urllib.parse import quote

    return quote(subject, safe="")


@schemas.command("config")
@click.argument("subject", required=False)
@click.option(
    "--set",
    "level",
    metavar="LEVEL",
    help="Set the compatibility level: BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, "
    "FULL_TRANSITIVE or NONE.",
)
@with_output_option
@with_registry_options
def config(subject: str | None, level: str | None, registry: RegistrySettings, output: str) -> None:
    """The compatibility level of SUBJECT, or the global one; with --set, changes it. A subject without a
    level of its own shows the global one, and `source: global` says so."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    client = registry.client()
    source = "subject" if subject else "global"
    with registry_errors(registry):
        if level is not None:
            done = client.set_compatibility(subject, level.upper())
            shown = done["compatibility"] if isinstance(done, dict) else str(done)
        else:
            try:
                shown = client.get_compatibility(subject)
            except SchemaRegistryError as exc:
                if subject is None or exc.error_code != _NO_SUBJECT_CONFIG:
                    raise
                shown, source = client.get_compatibility(None), "global"
    emit_object(
        {**({"subject": subject} if subject else {}), "compatibility": shown, "source": source}, output
    )


@schemas.command("mode")
@click.argument("subject", required=False)
@click.option("--set", "mode", metavar="MODE", help="Set the mode: READWRITE, READONLY or IMPORT.")
@click.option("--force", is_flag=True, help="With --set IMPORT: even though schemas are registered.")
@with_output_option
@with_registry_options
def mode(subject: str | None, mode: str | None, force: bool, registry: RegistrySettings, output: str) -> None:
    """The mode of SUBJECT, or the global one; with --set, changes it. A subject without a mode of its own
    shows the global one, and `source: global` says so."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    client = registry.client()
    source = "subject" if subject else "global"
    with registry_errors(registry):
        if mode is not None:
            if subject is None:
                shown = client.update_global_mode(mode.upper(), force)
            else:
                shown = client.update_mode(subject, mode.upper(), force)
        elif subject is None:
            shown = client.get_global_mode()
        else:
            try:
                shown = client.get_mode(subject)
            except SchemaRegistryError as exc:
                if exc.error_code != _NO_SUBJECT_MODE:
                    raise
                shown, source = client.get_global_mode(), "global"
    emit_object({**({"subject": subject} if subject else {}), "mode": shown, "source": source}, output)


@schemas.command("delete")
@click.argument("subject")
@click.option("--version", "version", help="Only this version (or latest).")
@click.option(
    "--permanent",
    is_flag=True,
    help="Remove for good (soft-deleting first, as the registry requires); ids are not reused.",
)
@with_output_option
@with_registry_options
def delete(
    subject: str, version: str | None, permanent: bool, registry: RegistrySettings, output: str
) -> None:
    """Deletes SUBJECT (every version), or one --version: soft (kept, readable by id, listed with
    --deleted) unless --permanent. Prints the versions deleted."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    client = registry.client()
    number = None if version is None else _version(version, "--version")
    with registry_errors(registry):
        if number == "latest":  # a permanent delete needs the number: "latest" of a soft-deleted one is gone
            number = client.get_version(subject, "latest").version
        try:
            if number is None:
                deleted = list(client.delete_subject(subject))
            else:
                deleted = [client.delete_version(subject, int(number))]
        except SchemaRegistryError as exc:
            if not (permanent and exc.error_code in _SOFT_DELETED):
                raise
            deleted = []  # soft-deleted before: the permanent delete below finishes it
        if permanent:
            if number is None:
                deleted = list(client.delete_subject(subject, permanent=True))
            else:
                deleted = [client.delete_version(subject, int(number), permanent=True)]
    doc = {"subject": subject, "versions": deleted, "permanent": permanent}
    if output == "json":
        emit_object(doc, output)
    else:
        listed = ", ".join(map(str, deleted)) or "none"
        click.echo(f"{'permanently ' if permanent else ''}deleted {subject} versions {listed}")

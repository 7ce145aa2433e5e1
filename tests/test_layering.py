"""The layering of the whole package, pinned by reading every module's imports with `ast`.

Layers, bottom to top: protocol, security, schemas, storage, coordinators, registry, broker, mq, spark, ops.
schooner/config.py (the settings) sits beside them: every layer may import it, and it imports no layer. A
layer never imports one above it, and some import less than that (LAYER_RULES). Only storage talks to
Redis, so only storage imports redis or hiredis. Within storage, the sub-packages have an order of their
own (SUBPACKAGE_RULES), and so do coordinators' (COORDINATOR_RULES).

Every import counts: at the top of a module, inside a function, or under TYPE_CHECKING. Relative imports
are resolved to absolute names, and `from a import b` is read as an import of `a.b`. A rule forbids
prefixes on dotted boundaries: "schooner.storage.log" covers the module or package of that name and what
is inside it, not "schooner.storage.logging".

A break of a rule that exists today is listed in that rule's `allow`, by name: the test passes with it,
fails on any new break, and fails when a listed one has gone, so the list only shrinks.

The tests have one layering rule of their own: a test module imports helper modules, never another test
module.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "schooner"
# bottom to top; schemas (pure parsers) sits beside protocol and security, registry (the schema registry's
# service and HTTP API) on storage, below the broker that serves it
LAYERS = (
    "protocol", "security", "schemas", "storage", "coordinators", "registry", "broker", "mq", "spark", "ops"
)  # fmt: skip
ANYONE = ("schooner.config",)  # importable from every layer
TOP_LEVEL = ("schooner", "schooner.config")  # the modules that are in no layer


@dataclass(frozen=True)
class Import:
    importer: str  # the importing module, e.g. "schooner.broker.server"
    imported: str  # absolute: "redis.exceptions.RedisError" for `from redis.exceptions import RedisError`
    line: int

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.imported}"


@dataclass(frozen=True)
class Allowed:
    """A known break of a rule, tolerated by name until the code is fixed."""

    name: str
    importers: tuple[str, ...]  # module prefixes
    imported: str  # a prefix of what they import


@dataclass(frozen=True)
class Rule:
    """Modules under `importers`, except those under `exempt`, import nothing under `forbidden`; and, when
    `only` is given, nothing of schooner but their own package, `only` and ANYONE."""

    name: str
    importers: str
    forbidden: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    exempt: tuple[str, ...] = ()
    allow: tuple[Allowed, ...] = ()


def never(
    importers: str, *forbidden: str, exempt: tuple[str, ...] = (), allow: tuple[Allowed, ...] = ()
) -> Rule:
    """A rule in one line: `never("schooner.storage.log", "schooner.storage.mq")`."""
    name = f"{importers} never imports {' or '.join(forbidden)}"
    if exempt:
        name += f" (except {', '.join(exempt)})"
    return Rule(name, importers, forbidden=forbidden, exempt=exempt, allow=allow)


def only(importers: str, *allowed: str, exempt: tuple[str, ...] = ()) -> Rule:
    """A rule in one line: `only("schooner.mq", "schooner.storage")` (config is always allowed)."""
    name = f"{importers} imports only {' and '.join(allowed) or 'itself'}"
    if exempt:
        name += f" (except {', '.join(exempt)})"
    return Rule(name, importers, only=allowed, exempt=exempt)


def floors(package: str, *levels: str | tuple[str, ...]) -> list[Rule]:
    """The parts of `package` on floors, bottom to top: none imports a part on a floor above its own.
    `floors("schooner.storage", ("redis", "keys"), "log", "mq")`: redis and keys import neither log nor
    mq, log imports no mq."""
    names = [(level,) if isinstance(level, str) else level for level in levels]
    above = [[f"{package}.{part}" for level in names[i + 1 :] for part in level] for i in range(len(names))]
    return [never(f"{package}.{part}", *above[i]) for i, level in enumerate(names[:-1]) for part in level]


def under(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def breaks(rule: Rule, imp: Import) -> bool:
    """Whether `imp` breaks `rule`, tolerated or not."""
    if not under(imp.importer, (rule.importers,)) or under(imp.importer, rule.exempt):
        return False
    if under(imp.imported, rule.forbidden):
        return True
    mine = (rule.importers, *(rule.only or ()), *ANYONE)
    return rule.only is not None and under(imp.imported, ("schooner",)) and not under(imp.imported, mine)


def tolerated_by(rule: Rule, imp: Import) -> Allowed | None:
    for entry in rule.allow:
        if under(imp.importer, entry.importers) and under(imp.imported, (entry.imported,)):
            return entry
    return None


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_in(source: str, module: str, is_package: bool) -> list[Import]:
    """Every import in `source` (the code of `module`), with relative ones made absolute."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                assert node.level <= len(parts), f"{module}:{node.lineno} imports from above the package"
                base = ".".join([*parts[: len(parts) - node.level + 1], *filter(None, [node.module])])
            found += [
                Import(module, base if alias.name == "*" else f"{base}.{alias.name}", node.lineno)
                for alias in node.names
            ]
    return found


@cache
def package_imports() -> tuple[Import, ...]:
    found: list[Import] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += imports_in(path.read_text(), module_name(path), path.name == "__init__.py")
    return tuple(found)


@cache
def modules() -> tuple[str, ...]:
    return tuple(module_name(path) for path in sorted(PACKAGE.rglob("*.py")))


_TYPED = "schooner.storage.cold.typed"
LAYER_RULES = [
    *floors("schooner", *LAYERS),  # no layer imports one above it: the broker imports no mq, spark or ops
    # Layers that import less than everything below them.
    only("schooner.config"),  # the settings: every layer reads them, so they import none
    only("schooner.protocol"),  # the wire format stands alone
    only("schooner.security"),  # SASL, SCRAM, ACL matching and quota windows: pure, like the protocol
    only("schooner.schemas"),  # Avro, JSON Schema and Protobuf parsers and compatibility: pure as well
    # The registry is storage's state under Confluent's API: no broker, no coordinators, no protocol.
    only("schooner.registry", "schooner.storage", "schooner.schemas"),
    # Storage needs not even the protocol (records reach it as bytes); it keeps SCRAM credentials and ACLs.
    # The cold tier's typed columns alone parse schemas: they decode records into the table's columns.
    only("schooner.storage", "schooner.security.scram", "schooner.security.acls", exempt=(_TYPED,)),
    only(_TYPED, "schooner.storage", "schooner.schemas"),
    only("schooner.coordinators", "schooner.storage", "schooner.protocol"),
    only("schooner.mq", "schooner.storage"),  # the MQ library runs without a broker
    only("schooner.spark", "schooner.storage", "schooner.schemas"),  # so does the Spark connector
    # Only storage talks to Redis.
    never("schooner", "redis", "hiredis", exempt=("schooner.storage",)),
    # Only the cold tier talks to the cold store.
    never("schooner", "deltalake", exempt=("schooner.storage.cold",)),
    never("schooner", "pyiceberg", exempt=("schooner.storage.cold",)),
]

# Within storage (its package docstring draws the map): floors redis/, keys, offsets, topic_partition ->
# topics/, cluster -> log/ -> mq/, groups/, cold/ -> store, blocking_store (the lists of round trips);
# groups/ never imports mq/, and log/ never imports mq/ (mq/ appends through log/, never the reverse).
SUBPACKAGE_RULES = [
    *floors(
        "schooner.storage",
        ("redis", "keys", "offsets", "topic_partition"),
        ("topics", "cluster", "quotas", "security"),
        "log",
        ("mq", "groups", "transactions", "share", "cold"),
        ("store_coordination",),
        ("store", "blocking_store"),
    ),
    never("schooner.storage.groups", "schooner.storage.mq"),
    # The cold tier reads the log; the log never knows it is archived.
    never("schooner.storage.log", "schooner.storage.cold"),
]


# Within coordinators (its package docstring draws the map): the epoch-based groups' base (modern/) names no
# kind of group, share groups never import consumer groups, and transactions and groups are strangers.
_GROUPS = "schooner.coordinators.groups"
COORDINATOR_RULES = [
    never(f"{_GROUPS}.modern", f"{_GROUPS}.classic", f"{_GROUPS}.consumer", f"{_GROUPS}.share"),
    never(f"{_GROUPS}.share", f"{_GROUPS}.consumer"),
    never("schooner.coordinators.transactions", _GROUPS),
    never(_GROUPS, "schooner.coordinators.transactions"),
]

# Within the broker (broker/__init__.py draws the map): net/ (connections, sessions, limits, TLS, SASL) knows
# no other part, and hands each request to a dispatch function it is given; beside it the outage codes,
# the Redis health and the compactor. Then access/ (ACLs, quotas), metadata/ (topic cache, cluster view),
# metrics/ and tiering/ (the cold store, the archiver); the data path (partitions/); the context that
# holds the parts; the handlers; what runs them
# (dispatch, upkeep, tenants); and the server on top.
BROKER_RULES = [
    *floors(
        "schooner.broker",
        ("net", "outages", "health", "memory", "compactor"),
        ("access", "metadata", "metrics", "tiering"),
        "partitions",
        "context",
        "handlers",
        ("dispatch", "upkeep", "tenants"),
        "server",
    ),
    *floors(
        "schooner.broker.net",
        ("session", "limits", "watchdog"),
        ("tls", "refusals", "response_budget", "authentication"),
        "connection",
        "listener",
    ),
    *floors(
        "schooner.broker.partitions",
        ("sequencer", "retry_order", "waiters", "recent_batches", "fetch_codec"),
        ("fetch_sessions", "share_sessions", "cold_reads"),
        "partition_ends",
        ("writer", "reader"),
        "data_path",
    ),
    # The data path takes no context: it is built by open_context, below the handlers.
    never("schooner.broker.partitions", "schooner.broker.context", "schooner.broker.handlers"),
]


def unexplained(rule: Rule) -> list[str]:
    return [str(i) for i in package_imports() if breaks(rule, i) and tolerated_by(rule, i) is None]


@pytest.mark.parametrize("rule", LAYER_RULES, ids=lambda rule: rule.name)
def test_layer_rule(rule: Rule) -> None:
    broken = unexplained(rule)
    assert not broken, "\n".join(broken)
    assert any(under(m, (rule.importers,)) for m in modules()), f"no module is under {rule.importers}"


@pytest.mark.parametrize("rule", SUBPACKAGE_RULES, ids=lambda rule: rule.name)
def test_storage_subpackage_rule(rule: Rule) -> None:
    broken = unexplained(rule)
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("rule", COORDINATOR_RULES, ids=lambda rule: rule.name)
def test_coordinator_subpackage_rule(rule: Rule) -> None:
    broken = unexplained(rule)
    assert not broken, "\n".join(broken)
    assert any(under(m, (rule.importers,)) for m in modules()), f"no module is under {rule.importers}"


@pytest.mark.parametrize("rule", BROKER_RULES, ids=lambda rule: rule.name)
def test_broker_floor_rule(rule: Rule) -> None:
    broken = unexplained(rule)
    assert not broken, "\n".join(broken)
    assert any(under(m, (rule.importers,)) for m in modules()), f"no module is under {rule.importers}"


def _handler_modules() -> set[str]:
    """The modules of broker/handlers/ that handle a request (define a handle_<api>); the others there
    (common.py, topic_configs.py, ...) are what handlers share."""
    handlers = PACKAGE / "broker" / "handlers"
    return {
        module_name(path)
        for path in handlers.rglob("*.py")
        if re.search(r"^async def handle_", path.read_text(), re.M)
    }


def test_handlers_never_import_one_another() -> None:
    """A handler imports what handlers share, never another handler's module: what two APIs need in
    common is a shared module of its own."""
    handlers = _handler_modules()
    assert len(handlers) > 20
    crossing = [
        str(i)
        for i in package_imports()
        if i.importer in handlers and any(i.imported == h or i.imported.startswith(h + ".") for h in handlers)
    ]
    assert not crossing, "\n".join(crossing)


def test_every_module_imports() -> None:
    """mypy is told to ignore imports it cannot find (ignore_missing_imports, for untyped libraries),
    so it would not see an import of a module that was moved: importing each one does."""
    failed = []
    for name in modules():
        try:
            importlib.import_module(name)
        except Exception as exc:  # any failure to import is the finding
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    assert not failed, "\n".join(failed)


def test_the_rule_tables_are_not_empty() -> None:
    assert len(LAYER_RULES) >= len(LAYERS) and SUBPACKAGE_RULES and COORDINATOR_RULES and BROKER_RULES


ALLOWED = [
    (rule, entry)
    for rule in LAYER_RULES + SUBPACKAGE_RULES + COORDINATOR_RULES + BROKER_RULES
    for entry in rule.allow
]


def test_every_allowed_break_still_exists() -> None:
    """Once the code is fixed, the entry goes too (there is none today: the list only shrinks)."""
    for rule, entry in ALLOWED:
        for importer in entry.importers:
            assert any(
                breaks(rule, i) and tolerated_by(rule, i) == entry and under(i.importer, (importer,))
                for i in package_imports()
            ), f"{importer} no longer needs '{entry.name}': remove it from the allow-list"


def test_every_module_is_in_a_layer() -> None:
    assert "schooner.broker.server" in modules()  # the walk reads sub-packages
    astray = [m for m in modules() if m not in TOP_LEVEL and not under(m, (f"schooner.{x}" for x in LAYERS))]
    assert astray == [], "place these in LAYERS (and give them rules)"


def test_no_module_imports_by_name_at_run_time() -> None:
    """`importlib.import_module` or `__import__` would hide an import from this test."""
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                called = ast.unparse(node.func)
                assert called not in ("importlib.import_module", "import_module", "__import__"), path


# --- the checker itself ---


def test_relative_imports_resolve_to_absolute_names() -> None:
    source = """
import redis.exceptions
from . import entry
from .calls import Call
from .. import config
from ..protocol.records import read_batches as rb

def later() -> None:
    from ..broker import server
"""
    assert [i.imported for i in imports_in(source, "schooner.storage.log", is_package=False)] == [
        "redis.exceptions",
        "schooner.storage.entry",
        "schooner.storage.calls.Call",
        "schooner.config",
        "schooner.protocol.records.read_batches",
        "schooner.broker.server",
    ]
    # In a package's __init__, "." is the package itself.
    init = imports_in("from . import keys\nfrom .mq import queue", "schooner.storage", is_package=True)
    assert [i.imported for i in init] == ["schooner.storage.keys", "schooner.storage.mq.queue"]
    with pytest.raises(AssertionError, match="above the package"):
        imports_in("from .... import x", "schooner.storage.log", is_package=False)


def test_module_names_come_from_paths() -> None:
    assert module_name(PACKAGE / "storage" / "log" / "append.py") == "schooner.storage.log.append"
    assert module_name(PACKAGE / "storage" / "__init__.py") == "schooner.storage"
    assert module_name(PACKAGE / "__init__.py") == "schooner"


def test_the_checker_finds_breaks_and_only_breaks() -> None:
    log_to_mq = never("schooner.storage.log", "schooner.storage.mq")
    assert breaks(log_to_mq, Import("schooner.storage.log.append", "schooner.storage.mq.queue.claim", 1))
    assert breaks(log_to_mq, Import("schooner.storage.log", "schooner.storage.mq", 1))
    assert not breaks(log_to_mq, Import("schooner.storage.log.read", "schooner.storage.mqtt", 1))
    assert not breaks(log_to_mq, Import("schooner.storage.logging", "schooner.storage.mq", 1))
    assert not breaks(log_to_mq, Import("schooner.storage.mq.queue", "schooner.storage.log", 1))

    mq = only("schooner.mq", "schooner.storage")
    assert breaks(mq, Import("schooner.mq.engine", "schooner.broker.context", 1))
    assert breaks(mq, Import("schooner.mq.engine", "schooner.protocol.records.read_batches", 1))
    for fine in ("schooner.mq.membership", "schooner.storage.leases", "schooner.config", "asyncio"):
        assert not breaks(mq, Import("schooner.mq.engine", fine, 1)), fine

    redis_rule = never("schooner", "redis", exempt=("schooner.storage",))
    assert breaks(redis_rule, Import("schooner.mq.consumer", "redis.asyncio", 1))
    assert not breaks(redis_rule, Import("schooner.storage.client", "redis.asyncio", 1))
    assert not breaks(redis_rule, Import("schooner.mq.consumer", "redistribute", 1))


def test_an_allowed_break_is_tolerated_by_name_and_nothing_else() -> None:
    entry = Allowed("why", importers=("schooner.broker.server",), imported="redis.exceptions")
    rule = never("schooner", "redis", exempt=("schooner.storage",), allow=(entry,))
    assert tolerated_by(rule, Import("schooner.broker.server", "redis.exceptions.RedisError", 1)) == entry
    assert tolerated_by(rule, Import("schooner.broker.server", "redis.asyncio", 1)) is None
    assert (
        tolerated_by(rule, Import("schooner.broker.net.listener", "redis.exceptions.RedisError", 1)) is None
    )


def test_floors_forbid_every_higher_floor_and_nothing_else() -> None:
    rules = floors("p", ("a", "b"), "c", ("d", "e"))
    assert [(r.importers, r.forbidden) for r in rules] == [
        ("p.a", ("p.c", "p.d", "p.e")),
        ("p.b", ("p.c", "p.d", "p.e")),
        ("p.c", ("p.d", "p.e")),
    ]
    assert [r.importers for r in floors("schooner", *LAYERS)] == [f"schooner.{x}" for x in LAYERS[:-1]]


# --- the tests' own layout ---

TESTS = Path(__file__).resolve().parent


def owning_test_module(name: str) -> str | None:
    """The test_*.py module that `name` (an imported name) lives in, if any."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        path = TESTS.parent.joinpath(*parts[:n]).with_suffix(".py")
        if path.is_file():
            return ".".join(parts[:n]) if path.name.startswith("test_") else None
    return None


def test_test_modules_never_import_one_another() -> None:
    """Shared helpers live in helper modules (tests/clients.py, wire.py, broker/helpers.py, ...)."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        me = module_name(path, TESTS)
        for imp in imports_in(path.read_text(), me, path.name == "__init__.py"):
            other = owning_test_module(imp.imported)
            if other is not None and other != me:
                found.append(str(imp))
    assert not found, "\n".join(found)

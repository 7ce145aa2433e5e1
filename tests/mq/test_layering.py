"""schooner.mq talks to Redis only through schooner.storage, and never uses the broker or the protocol."""

from __future__ import annotations

import ast
from pathlib import Path

import schooner.mq

PACKAGE = Path(schooner.mq.__file__).parent


def test_mq_imports_only_the_storage_layer() -> None:
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert not name.startswith(("schooner.broker", "schooner.protocol", "redis", "hiredis")), (
                    path.name,
                    name,
                )
                if name.startswith("schooner."):
                    assert name.startswith("schooner.storage"), (path.name, name)

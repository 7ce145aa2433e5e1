"""Placeholder."""
from typing import Any


async def handle_describe(ctx: Any, body: Any) -> Any:
    raise NotImplementedError


handle_alter = handle_incremental_alter = handle_describe

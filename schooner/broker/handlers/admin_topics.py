"""Placeholder."""
from typing import Any


async def handle_create(ctx: Any, body: Any) -> Any:
    raise NotImplementedError


handle_delete = handle_create_partitions = handle_create

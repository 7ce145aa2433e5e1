"""Placeholder."""
from typing import Any


async def handle_delete_records(ctx: Any, body: Any) -> Any:
    raise NotImplementedError

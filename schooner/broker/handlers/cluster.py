"""Placeholder."""
from typing import Any


async def handle_describe_cluster(ctx: Any, body: Any) -> Any:
    raise NotImplementedError

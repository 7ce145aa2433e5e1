"""A deployment's keyspaces (its tenants') share one cold thread pool and one cache of decoded files, each
keyspace keeping its own tables; closing a tenant's cold store leaves the deployment's working."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from schooner.broker.tiering.tiering import open_cold_store
from schooner.config import Settings
from schooner.storage.cold.source import ArchiveSlice
from schooner.storage.offsets import DENSE_OFFSETS
from schooner.storage.topics import config
from schooner.storage.topics.metadata import Topic


def _topic(name: str) -> Topic:
    return Topic(name, uuid.uuid4(), 1, DENSE_OFFSETS, {}, config.effective({}, {}))


def _slice(values: list[bytes]) -> ArchiveSlice:
    entries = [
        [b"0-%d" % (i + 1), [b"timestamp", b"1700000000000", b"value", v]] for i, v in enumerate(values)
    ]
    return ArchiveSlice(0, len(values), entries, (), 0, len(values), len(values))


def test_tenants_share_the_deployments_threads_and_file_cache(tmp_path: Path) -> None:
    settings = Settings(cold_store_url=str(tmp_path / "cold"))
    deployment = open_cold_store(settings, "schooner")
    assert deployment is not None
    tenant = open_cold_store(settings, "schooner:tenant:acme", deployment=deployment)
    assert tenant is not None
    assert tenant._executor is deployment._executor
    assert tenant.cold.files is deployment.cold.files
    ours, theirs = _topic("clicks"), _topic("clicks")

    async def run() -> None:
        await deployment.archive(ours, 0, _slice([b"deployment"]))
        await tenant.archive(theirs, 0, _slice([b"tenant", b"tenant"]))
        # One name, two keyspaces: two tables, each read back on its own.
        read = await deployment.read(ours, 0, 0, 1 << 20)
        assert [fields[-1] for _, fields in read.entries] == [b"deployment"]
        read = await tenant.read(theirs, 0, 0, 1 << 20)
        assert [fields[-1] for _, fields in read.entries] == [b"tenant", b"tenant"]
        tenant.close()
        assert await deployment.archived_end(ours, 0) == 1  # the threads are still there

    asyncio.run(run())
    deployment.close()
    assert (tmp_path / "cold" / "schooner" / "tenant" / "acme" / "clicks").is_dir()

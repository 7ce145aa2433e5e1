"""A share group's state on the partitions, as DeleteGroups removes it (classic.py's DeleteGroups serves
every kind of group); shared by the group handlers, it handles no request itself."""

from __future__ import annotations

from ...context import BrokerContext


async def forget_share_state(ctx: BrokerContext, group_id: str) -> None:
    """After DeleteGroups deleted an empty share group: its share partitions go too (the Redis consumer
    groups on the partitions' streams, with their counters), and the list of its topics."""
    partitions = []
    for name in await ctx.store.share_topics(group_id):
        topic = await ctx.topics.load(name)
        if topic is not None:
            partitions += [(topic, p) for p in range(topic.partitions)]
    if partitions:
        await ctx.store.share_reset(partitions, group_id, [None] * len(partitions))
    await ctx.store.share_forget_group(group_id)

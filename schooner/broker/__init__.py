"""The broker: an asyncio server speaking the Kafka protocol over the Store.

A map, bottom floor first (tests/test_layering.py pins the floors; each package's __init__ has its own):

```
net/          the network, knowing no other part: listener.py (sockets) and connection.py (a
              connection's frames, its limits and response budget, SASL's gate), session.py (who is on
              the other end, and a request's RequestScope), limits.py, tls.py, watchdog.py,
              authentication.py (SASL), refusals.py (the log of refused requests), endpoints.py (a
              broker's address as this listener's clients see it). A connection hands requests to a
              dispatch function it is given.
outages.py    what a Redis failure is answered with (error codes per kind of request)
health.py     RedisHealth: whether this broker reaches Redis (groups, topic cache and cluster view read it)
memory.py     RedisMemory: how full Redis is; record appends wait at its high-water mark (the rest is the
              broker's own writes' reserve), tiered producers are slowed and the archiver trims before
compactor.py  log compaction of compacted topics (run by upkeep.py)
access/       who may do what and how much: authorizer.py (ACLs), quotas.py (client quotas)
metadata/     topic_cache.py (TopicCache, written through), cluster_view.py (live brokers, leaders, the
              controller), internal_topics.py (Kafka's __consumer_offsets and __transaction_state)
metrics/      Prometheus counters (per request, per partition) and scrape-time gauges
tiering/      tiered storage: Tiering (the keyspace's cold store; the cold side of ListOffsets and
              DeleteRecords) and the Archiver that upkeep.py runs (see its __init__)
partitions/   the data path: PartitionWriter (produce) and PartitionReader (fetch, long polls, cold reads
              below a tiered partition's Redis start) over the in-memory state they share, and clients'
              fetch and share sessions; see its __init__
context.py    BrokerContext: the parts above for one keyspace, built by open_context
handlers/     one handle_<api> per API: decode, authorize, call a part, build the answer; what two
              handlers share is a module of its own (common.py, topic_configs.py, ...), never a handler's
dispatch.py   a request to its handler (and its tenant's context), with quotas around it
upkeep.py     per-keyspace duties (notices, compaction, retention); tenants.py: tenants' contexts
server.py     the broker's start (listeners, contexts, heartbeat) and stop
```

Handlers own no state: what outlives a request lives in a part of the context, and a part takes what
it needs (the Store, another part), never the context. A handler's answer depends on its arguments
alone: (ctx, request, scope), where the RequestScope says who asks (session, client id, quota windows)
and the request and its response are typed per API (protocol/request_types.py, response_types.py).

Where things go: a new API is a handler in handlers/ and a line in dispatch.py's table; a new source of
records for Fetch is a step of PartitionReader's cascade (partitions/reader.py); a new per-connection
rule belongs to net/ (and reaches handlers through the session); a new kind of group is a coordinator
(schooner.coordinators) with its handlers in handlers/groups/.
"""

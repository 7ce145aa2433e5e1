"""The broker: an asyncio server speaking the Kafka protocol over the Store.

A map, bottom floor first (tests/test_layering.py pins the floors):

```
session.py limits.py tls.py    a connection's session, a request's RequestScope, limits, TLS contexts
response_budget.py watchdog.py a connection's untaken responses; its one timer for deadlines
outages.py internal_topics.py  what a Redis failure is answered with; Kafka's internal topics
compactor.py                   log compaction of compacted topics (run by upkeep.py)
cluster_view.py                ClusterView: live brokers, partition leaders, the controller
authorizer.py quotas.py        ACL decisions and client quotas (Access); refusals.py logs refusals;
authentication.py              SASL on a connection: the gate before the handlers, the exchange
topic_cache.py                 TopicCache: topic metadata, cached and written through
fetch_sessions.py share_sessions.py   clients' sessions (KIP-227, KIP-932): which partitions they want
metrics/                       Prometheus counters (per request, per partition) and scrape-time gauges
partitions/                    the data path: PartitionWriter (produce) and PartitionReader (fetch,
                               long polls) over the in-memory state they share; see its __init__
context.py                     BrokerContext: the parts above for one keyspace, built by open_context
handlers/                      one handle_<api> per API: decode, authorize, call a part, build the answer
dispatch.py connection.py      a request to its handler (and its tenant's context); a connection's frames
upkeep.py tenants.py           per-keyspace duties (notices, compaction, retention); tenants' contexts
listener.py server.py          the listening sockets, and the broker's start, heartbeat and stop
```

Handlers own no state: what outlives a request lives in a part of the context, and a part takes what
it needs (the Store, another part), never the context. A handler's answer depends on its arguments
alone: (ctx, request, scope), where the RequestScope says who asks (session, client id, quota windows)
and the request and its response are typed per API (protocol/request_types.py, response_types.py).
"""

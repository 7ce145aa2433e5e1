"""The web console (`schooner console`): server-rendered pages (Starlette, Jinja2, htmx) over a broker's
Kafka API and, for the Redis-side views (sizes, Redis memory, MQ groups and dead letters), the
deployment's Redis. See docs/console.md.

Modules: command.py (the click command), app.py (routes and wiring), one module per area (overview,
topics, messages, groups, mq, acls), kafka_data.py / kafka_messages.py (the Kafka side: the calls of
schooner/ops/kafka, shared with the CLI), redis_data.py (the Redis side, storage and schooner.mq),
sampler.py (the charts' history), sessions.py (logins), render.py (templates and error pages).
"""

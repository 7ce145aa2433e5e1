"""Coordinators: the broker's Kafka groups (classic, KIP-848 consumer and KIP-932 share groups), their
group configs, and transactions. All their state lives in Redis, through schooner.storage.groups and
schooner.storage.transactions.

The map, pure rules first:
- classic_model.py, classic_group.py: the classic group's data, and its state machine with no I/O
  (every transition; theory of operation in its docstring).
- consumer_group.py, assignors.py: the KIP-848 group, its reconciliation and server assignors.
- share_group.py, share_assignor.py: the KIP-932 share group and its "simple" assignor (several
  members per partition, no revocation); share_config.py: a share group's configs.
- group_ownership.py: GroupOwnership, which groups this broker coordinates: loading (claiming) them
  from Redis, fenced saves, dropping them when they move.
- classic_coordinator.py, consumer_coordinator.py, share_coordinator.py: each runs its protocol's
  requests under a group's lock and does the I/O; all hold the one GroupOwnership.
- group_coordinator.py: GroupCoordinator, the facade the broker knows as ctx.groups.
- redis_health.py: whether this broker reaches Redis (member sessions do not lapse while it cannot).
- group_config_defs.py: the group configs (the GROUP config resource), one table of names, defaults,
  bounds and checks; pure. group_configs.py: GroupConfigs, each group's configs as the broker sees
  them, cached for the data path and changed by the admin APIs.
- transaction_coordinator.py: TransactionCoordinator (ctx.transactions), transactional ids, their
  producer ids and epochs, and the two-phase end of a transaction.
"""

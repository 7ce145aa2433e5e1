"""Coordinators: the broker's Kafka groups (classic, KIP-848 consumer and KIP-932 share groups), their
group configs, and transactions. All their state lives in Redis, through schooner.storage.groups and
schooner.storage.transactions.

The map (each kind of group keeps its pure rules in group.py and its I/O in coordinator.py):

    groups/
      coordinator.py   GroupCoordinator, the facade the broker knows as ctx.groups; it reads the broker's
                       StorageHealth (member sessions do not lapse while the broker cannot reach Redis)
      ownership.py     GroupOwnership: which groups this broker coordinates, loading (claiming) them from
                       Redis, fenced saves, dropping them when they move; shared by every kind
      config_defs.py   the group configs (the GROUP config resource): one table of names, defaults,
                       bounds and checks; pure
      configs.py       GroupConfigs: each group's configs as the broker sees them, cached for the data
                       path and changed by the admin APIs
      classic/         model.py (the group's data), group.py (its state machine, with no I/O; theory of
                       operation in its docstring), coordinator.py (JoinGroup, SyncGroup, Heartbeat, ...)
      modern/          what KIP-848 and KIP-932 groups share, as Kafka's group/modern/: group.py
                       (EpochMember, EpochGroup: epochs, targets, the saved form) and coordinator.py
                       (EpochCoordinator: the heartbeat's skeleton, leaving, expiry)
      consumer/        KIP-848: group.py (revocation, static members, regexes), assignors.py ("uniform",
                       "range"), coordinator.py (ConsumerGroupHeartbeat)
      share/           KIP-932: group.py (several members per partition, no revocation), assignor.py
                       ("simple"), config.py (a share group's configs), coordinator.py (ShareGroupHeartbeat)
    transactions.py    TransactionCoordinator (ctx.transactions): transactional ids, their producer ids
                       and epochs, and the two-phase end of a transaction

Arrows within groups/ point down: modern/ imports no kind, share/ never imports consumer/ (a consumer
or classic coordinator only asks whether a group is a share group), and transactions.py and groups/
import nothing of each other (tests/test_layering.py pins these).
"""

"""Consumer group APIs, one module per family.

- classic.py: the classic protocol (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
  DescribeGroups, ListGroups, DeleteGroups);
- consumer.py: the KIP-848 consumer protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe);
- share.py: KIP-932 share groups' membership (ShareGroupHeartbeat, ShareGroupDescribe);
- heartbeat.py, describe.py: what those two share (a heartbeat's checks and response; a describe);
- offsets.py: a group's committed offsets (OffsetCommit, OffsetFetch, OffsetDelete), for both.
ListOffsets, which reads a partition's log rather than a group, is handlers/list_offsets.py.
"""

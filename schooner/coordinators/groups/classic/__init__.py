"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): model.py holds the data,
group.py every transition with no I/O, coordinator.py runs them and does their I/O."""

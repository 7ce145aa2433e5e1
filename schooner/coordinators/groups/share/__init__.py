"""KIP-932 share groups: group.py (several members per partition, no revocation), assignor.py (the
"simple" assignor), config.py (a share group's share.* configs), coordinator.py (ShareGroupHeartbeat's
own checks and steps over modern/coordinator.py)."""

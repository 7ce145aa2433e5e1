"""KIP-848 consumer groups: group.py (reconciliation with revocation, static members, regex
subscriptions), assignors.py (the "uniform" and "range" server assignors), coordinator.py
(ConsumerGroupHeartbeat's own checks and steps over modern/coordinator.py)."""

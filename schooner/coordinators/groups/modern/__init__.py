"""What epoch-based groups share (KIP-848 consumer groups and KIP-932 share groups), as Kafka's
group/modern/: group.py the members, epochs, target assignment and saved form; coordinator.py the
heartbeat's skeleton, leaving and expiry. The kinds (consumer/, share/) keep only what differs."""

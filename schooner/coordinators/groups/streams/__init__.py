"""KIP-1071 streams groups: Kafka Streams applications coordinated by the broker (group.protocol=streams)."""

"""Unit tests of broker/partitions/, mirroring its modules."""

"""Kafka groups of three kinds (classic, KIP-848 consumer, KIP-932 share) on one GroupOwnership, behind the
GroupCoordinator facade (coordinator.py). The package map is in schooner/coordinators/__init__.py."""

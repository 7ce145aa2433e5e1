"""The broker: an asyncio server speaking the Kafka protocol, with thin handlers over storage."""

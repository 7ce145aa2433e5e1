"""The Kafka wire protocol, sans-IO: bytes in, typed messages out, typed responses back to bytes.

Nothing in this package opens a socket or talks to Redis.
"""

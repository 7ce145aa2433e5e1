"""The storage layer: the only code that talks to Redis.

Each public coroutine is one round trip (or a fixed, small number of them) and says which.
"""

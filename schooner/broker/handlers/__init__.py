"""Request handlers: each takes the broker context and a typed request and returns a typed response.

Every entry point is named after its API (`handle_produce`, `handle_join_group`, ...) and takes that
API's union of versions from protocol/request_types.py; dispatch.py maps API keys to them. The group
APIs live together in groups/ (classic protocol, KIP-848 consumer protocol, committed offsets).
"""

"""Request handlers: each takes the broker context and a typed request and returns a typed response."""

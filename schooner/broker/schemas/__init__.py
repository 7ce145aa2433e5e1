"""The schema registry in the broker: its HTTP server (server.py), who may use it (access.py), and records
checked against it on produce (validation.py). The registry itself is schooner/registry."""

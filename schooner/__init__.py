"""Schooner: a streaming platform whose log lives in Redis Streams."""

__version__ = "0.1.0"

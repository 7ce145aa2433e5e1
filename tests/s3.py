"""The S3-compatible test server lives in chaos/s3.py (a chaos deployment runs one too)."""

from chaos.s3 import S3Server, start_s3_server, stop_s3_server

__all__ = ["S3Server", "start_s3_server", "stop_s3_server"]

"""The compiled modules: the fetch path's record-batch encoder (schooner/protocol/_batch.c) and the produce
path's record-batch reader (schooner/protocol/_produce.c) and RESP encoder (schooner/storage/redis/_resp.c),
and the Redis module that appends a run of stream entries in one call (schooner/storage/redis/_stream_module.c).

Everything else is in pyproject.toml. Without a C compiler the broker still works: schooner.protocol.batch_c
falls back to the Python encoder and decoder, storage.redis.resp to its list join, and log_append.lua to
one XADD per record.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "schooner.protocol._batch",
            ["schooner/protocol/_batch.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "schooner.protocol._produce",
            ["schooner/protocol/_produce.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "schooner.storage.redis._resp",
            ["schooner/storage/redis/_resp.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        # Not a Python module: a Redis module, which the embedded redis-server loads (see its head comment).
        Extension(
            "schooner.storage.redis._stream_module",
            ["schooner/storage/redis/_stream_module.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)

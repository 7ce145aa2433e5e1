"""The one compiled module: the fetch path's record-batch encoder (see schooner/protocol/_batch.c).

Everything else is in pyproject.toml. Without a C compiler the broker still works: schooner.protocol.batch_c
falls back to the Python encoder.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "schooner.protocol._batch",
            ["schooner/protocol/_batch.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)

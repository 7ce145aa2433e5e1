"""The `schooner` command's process entry: the console script, and `python -m schooner.ops.entry`.

kio registers a hypothesis strategy for each of its types whenever hypothesis is importable, which in
a test environment costs a process one to three seconds of start (more on a loaded machine) and is of
no use to a command. A process started here makes the import fail before kio is loaded, so kio skips
the registration; code that imports schooner.ops.cli in-process (the tests) is left alone.
"""

from __future__ import annotations

import sys


def main() -> None:
    if "hypothesis" not in sys.modules:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]  # import hypothesis: ImportError
    from .cli import main as cli

    cli()


if __name__ == "__main__":
    main()

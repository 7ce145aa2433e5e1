"""Whether this run has the compiled fast paths on, for the tests that compare them with their Python twins.

`make test` runs the fast paths' tests twice: once as built, and once with SCHOONER_COMPILED=0, where
the broker runs its Python paths alone (schooner.config.compiled_enabled). A test that needs a compiled
module is marked `needs_compiled`, which the second run leaves out (`-m "not needs_compiled"`: no test is
skipped); a test that checks a module is built checks instead that it is there exactly when the switch
is on.
"""

from __future__ import annotations

import pytest

from schooner.config import compiled_enabled

ON = compiled_enabled()

needs_compiled = pytest.mark.needs_compiled

"""The bench's SIGTERM handling (bench/servers.py): a SIGTERM unwinds the run as an error would."""

from __future__ import annotations

import os
import signal

import pytest

from bench.servers import stop_on_sigterm


def test_a_sigterm_unwinds_the_bench() -> None:
    before = signal.getsignal(signal.SIGTERM)
    try:
        stop_on_sigterm()
        with pytest.raises(SystemExit) as stopped:
            os.kill(os.getpid(), signal.SIGTERM)
        assert stopped.value.code == 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, before)

"""Hypothesis strategies shared by the tests that feed the compiled fast paths hostile input."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

RARELY = st.integers(0, 19).map(lambda n: n == 0)  # true one time in twenty


@st.composite
def _either(draw: st.DrawFn, usual: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> Any:
    return draw(other) if draw(RARELY) else draw(usual)


def mostly(usual: st.SearchStrategy[Any], *others: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`usual` 19 times in 20, else one of `others`: inputs stay well formed but for a field or two."""
    return _either(usual, st.one_of(*others))

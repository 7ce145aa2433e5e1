"""The consume output formats, record by record: kcat-style format strings and the JSON preset."""

from __future__ import annotations

import json

import pytest

from schooner.ops.kafka.formats import Consumed, FormatError, as_json, compile_format

RECORD = Consumed("t", 2, 41, 1700000000000, "CreateTime", b"k", b"v\xff", [("h", b"1"), ("n", None)])
NULLS = Consumed("t", 0, 0, None, None, None, None)


def test_tokens_escapes_and_nulls() -> None:
    render = compile_format("%t/%p/%o %k=%s [%h] %T %K %S 100%%\\t\\\\\\n")
    assert render(RECORD) == b"t/2/41 k=v\xff [h=1,n=] 1700000000000 1 2 100%\t\\\n"
    assert render(NULLS) == b"t/0/0 = []  -1 -1 100%\t\\\n"
    assert compile_format("value")(RECORD) == b"v\xff\n"
    assert compile_format("kv")(RECORD) == b"k\tv\xff\n"


@pytest.mark.parametrize("bad", ["%x", "50%", "\\q"])
def test_bad_formats_are_refused(bad: str) -> None:
    with pytest.raises(FormatError):
        compile_format(bad)


def test_json_says_which_bytes_it_encoded() -> None:
    got = json.loads(as_json(RECORD))
    assert got["key"] == "k" and "key_encoding" not in got
    assert (got["value"], got["value_encoding"]) == ("dv8=", "base64")
    assert got["headers"] == [{"key": "h", "value": "1"}, {"key": "n", "value": None}]
    assert json.loads(as_json(RECORD, "hex"))["value"] == "76ff"
    empty = json.loads(as_json(NULLS))
    assert (empty["key"], empty["value"], empty["timestamp"], empty["headers"]) == (None, None, None, [])

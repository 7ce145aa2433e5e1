"""The lane's RESP encoder writes long commands byte for byte as hiredis.pack_command does: the compiled one
(_resp.c) and the Python one, on chosen, random and extreme commands."""

from __future__ import annotations

from typing import Any

import hiredis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schooner.storage.redis import resp
from tests.compiled import ON, needs_compiled

VALUES = [bytes([i % 251]) * (i % 7 * 30) for i in range(300)]  # lengths repeat, one is empty


@pytest.mark.parametrize(
    "args",
    [
        ["EVALSHA", "ab" * 20, 1, "key", *VALUES],  # str and int head, bytes tail
        [b"XADD", *VALUES],  # all bytes
        ["SET", "k", "v"],  # short: hiredis itself
        ["RPUSH", "ключ", *[f"élément {i}" for i in range(100)]],  # UTF-8 text
        ["RPUSH", "k", *range(-50, 50)],  # negative numbers
        ["RPUSH", "k", 1.5, *VALUES],  # a float: hiredis writes it
        ["RPUSH", "k", memoryview(b"mv"), *VALUES],  # another buffer: hiredis too
    ],
)
def test_pack_matches_hiredis(args: list[Any]) -> None:
    assert resp.pack(args) == hiredis.pack_command(tuple(args))


def test_pack_reads_back_as_the_same_arguments() -> None:
    # A RESP reader sees the command as an array of the arguments, in order.
    reader = hiredis.Reader()
    reader.feed(resp.pack([b"CMD", *VALUES]))
    assert reader.gets() == [b"CMD", *VALUES]


class Tagged(bytes):
    pass


def test_the_compiled_encoder_is_built() -> None:
    # `make install` builds it; without it (or with SCHOONER_COMPILED=0) resp.pack joins in Python,
    # which the cases above also cover.
    assert (resp.pack_bytes is not None) == ON


@needs_compiled
def test_the_compiled_encoder_matches_hiredis() -> None:
    assert resp.pack_bytes is not None
    args = [b"XADD", b"", b"x" * 1_000_003, *VALUES, b"9" * 10]
    assert resp.pack_bytes(args) == hiredis.pack_command(tuple(args))
    assert resp.pack_bytes(tuple(args)) == resp.pack_bytes(args)


@needs_compiled
def test_the_compiled_encoder_leaves_anything_but_plain_bytes_to_the_join() -> None:
    assert resp.pack_bytes is not None
    assert resp.pack_bytes([b"RPUSH", b"k", "text"]) is None
    assert resp.pack_bytes([b"RPUSH", Tagged(b"k")]) is None
    assert resp.pack([b"RPUSH", Tagged(b"k"), *VALUES]) == hiredis.pack_command((b"RPUSH", b"k", *VALUES))


# Random and extreme commands, through the compiled encoder, the Python one, and hiredis: the same
# bytes, or all refuse. Lengths sit at the digit boundaries of their headers (9/10, 99/100, ...), and
# commands are short and long (the Python encoder joins from _LONG arguments on).
TWINS = settings(derandomize=True, database=None, deadline=None, max_examples=200)
BOUNDARY_LENGTHS = [0, 1, 9, 10, 99, 100, 999, 1000, 10_000]
plain_bytes = st.binary(max_size=12) | st.sampled_from(BOUNDARY_LENGTHS).map(lambda n: b"\xff" * n)
any_argument = st.one_of(
    plain_bytes,
    st.text(max_size=6),
    st.integers(),  # any size: hiredis and the join write its digits
    st.sampled_from([True, 1.5, float("nan"), bytearray(b"ba"), memoryview(b"mv"), Tagged(b"sub"), None]),
)
lengths = st.integers(0, 3) | st.integers(62, 66) | st.just(130)


def _packed(pack: Any, args: Any) -> Any:
    try:
        return pack(args)
    except Exception:
        return "refused"


@TWINS
@given(st.data(), lengths)
def test_commands_of_bytes_pack_alike(data: st.DataObject, n: int) -> None:
    args = data.draw(st.lists(plain_bytes, min_size=n, max_size=n))
    expected = hiredis.pack_command(tuple(args))
    assert resp.pack_python(args) == expected
    assert resp.pack(args) == expected
    if resp.pack_bytes is not None:
        assert resp.pack_bytes(args) == resp.pack_bytes(tuple(args)) == expected
    reader = hiredis.Reader()
    reader.feed(expected)
    assert reader.gets() == args


@TWINS
@given(st.data(), lengths)
def test_commands_of_any_arguments_pack_alike_or_are_refused_alike(data: st.DataObject, n: int) -> None:
    args = data.draw(st.lists(any_argument, min_size=n, max_size=n))
    expected = _packed(lambda a: hiredis.pack_command(tuple(a)), args)
    assert _packed(resp.pack_python, args) == expected
    assert _packed(resp.pack, args) == expected
    if resp.pack_bytes is not None and not all(type(a) is bytes for a in args):
        assert resp.pack_bytes(args) is None  # left to the Python encoder


# ---- reply_scan: where a reply ends, read without making objects of it ----------------------------------

LINES = st.sampled_from([b"+OK", b"-ERR bad", b":-12", b":0", b"_", b",1.5", b"#t", b"(1234567890123456789"])


@st.composite
def replies(draw: st.DrawFn, depth: int = 0) -> bytes:
    """A RESP2 or RESP3 reply of any shape: lines, bulks (and nulls), nested aggregates, attributes."""
    kind = draw(st.integers(0, 4 if depth < 3 else 1))
    if kind == 0:
        return draw(LINES) + b"\r\n"
    if kind == 1:
        data = draw(st.binary(max_size=20) | st.just(b"a\r\nb"))
        head = draw(st.sampled_from([b"$", b"=", b"!"]))
        return b"$-1\r\n" if draw(st.integers(0, 9)) == 0 else head + b"%d\r\n" % len(data) + data + b"\r\n"
    if kind == 2 and draw(st.integers(0, 9)) == 0:
        return b"*-1\r\n"
    head = draw(st.sampled_from([b"*", b"~", b">", b"%", b"|"]))
    n = draw(st.integers(0, 4))
    items = [draw(replies(depth + 1)) for _ in range(2 * n if head in (b"%", b"|") else n)]
    out = head + b"%d\r\n" % n + b"".join(items)
    return out + draw(replies(depth + 1)) if head == b"|" else out  # an attribute, then what it describes


SCANNERS = [resp.reply_scan_python] + ([resp.reply_scan_c] if resp.reply_scan_c is not None else [])


@settings(derandomize=True, deadline=None, max_examples=400)
@given(st.lists(replies(), min_size=1, max_size=4), st.data())
def test_a_reply_ends_where_its_bytes_do_however_it_arrives(parts: list[bytes], data: st.DataObject) -> None:
    """Fed in random chunks, the scanners find each reply's end exactly, whichever kind it is."""
    stream = b"".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    for scan in SCANNERS:
        buf, ends, at, stack, start = bytearray(), [], 0, [1], 0
        for piece in [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]:
            buf += piece
            while True:
                at = scan(buf, at, stack)
                if stack:
                    break
                ends.append(at - start)
                start, stack = at, [1]
                if at == len(buf):
                    break
        assert ends == [len(p) for p in parts], scan
        assert stack == [1] and at == len(stream)


def test_plain_redis_replies_end_where_hiredis_reads_them() -> None:
    entries = b"*2\r\n*2\r\n$3\r\n0-1\r\n*2\r\n$5\r\nvalue\r\n$0\r\n\r\n*2\r\n$3\r\n0-2\r\n*0\r\n"
    for reply in (b"+OK\r\n", b"$-1\r\n", b"*-1\r\n", b"*0\r\n", b"-NOSCRIPT x\r\n", entries):
        reader = hiredis.Reader()
        reader.feed(reply + b"+next\r\n")
        reader.gets()
        for scan in SCANNERS:
            stack = [1]
            assert scan(reply + b"+next\r\n", 0, stack) == len(reply) and stack == []
        assert reader.gets() == b"next"  # hiredis read the same bytes as the reply


BAD = [b"?x\r\n", b"$abc\r\n", b"$-2\r\n", b"$3\r\nabcd\r\n", b"*1\n", b"$1\n", b"+OK\n", b"=-1\r\n"]
BAD += [b"%-1\r\n"]
BAD += [b"*-0\r\n", b"$" + b"9" * 19 + b"\r\n", b"*1\r\n" * 65 + b"+x\r\n", b"*\r\n", b"$-\r\n"]


@pytest.mark.parametrize("reply", BAD)
def test_bytes_that_are_not_resp_are_refused_by_both_scanners(reply: bytes) -> None:
    for scan in SCANNERS:
        with pytest.raises(ValueError):
            scan(reply, 0, [1])


@settings(derandomize=True, deadline=None, max_examples=400)
@given(replies(), st.data())
def test_both_scanners_read_changed_bytes_alike(reply: bytes, data: st.DataObject) -> None:
    """Hostile bytes: the compiled scanner answers as its Python twin, a position or a refusal."""
    changed = bytearray(reply)
    for _ in range(data.draw(st.integers(1, 3))):
        changed[data.draw(st.integers(0, len(changed) - 1))] = data.draw(st.sampled_from(b"*$%|-:\r\n9x"))
    outcomes = []
    for scan in SCANNERS:
        stack = [1]
        try:
            outcomes.append((scan(changed, 0, stack), stack))
        except ValueError:
            outcomes.append(("refused", []))
    assert all(o == outcomes[0] for o in outcomes)


@needs_compiled
def test_the_compiled_scanner_is_built_and_checks_its_arguments() -> None:
    scan = resp.reply_scan_c
    assert scan is not None and resp.reply_scan is scan and resp.xrange_summary is not None
    for pos, stack in ((-1, [1]), (6, [1]), (0, [-1]), (0, [1] * 65)):
        with pytest.raises(ValueError):
            scan(b"+OK\r\n", pos, stack)
    assert resp.xrange_summary(b"*1\r\n*2\r\n$3\r\n0-1\r\n*0\r\n") == (1, b"0-1")
    assert resp.xrange_summary(b"*1\r\n*2\r\n$3\r\n0-1\r\n") is None  # cut short
    assert resp.xrange_summary(b"*0\r\n") == (0, None) and resp.xrange_summary(b"+OK\r\n") is None

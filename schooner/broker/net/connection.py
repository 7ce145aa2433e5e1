"""One client connection: frames in, handlers run concurrently, responses out in request order.

What one connection may cost is bounded (limits.py):
- at most `max_in_flight_requests` requests and `max_in_flight_bytes` of their frames are held (read but
  not yet answered); at either limit the connection stops reading until responses go out. A single
  request larger than the byte limit is still served, alone;
- at most `max_queued_response_bytes` of responses computed but not taken by the client
  (response_budget.py): above it no more requests start and nothing is read until the client takes some;
- nothing in flight and no bytes received for `connections_max_idle_ms`: the connection is closed;
- a frame that started arriving but is not complete within `request_timeout_ms` closes the connection,
  and so does a response the client does not take within that time.
A client over its quota (access/quotas.py) is muted: nothing is read from it until Session.throttled_until
(KIP-219), and a response of a version older than KIP-219 waits until then before it goes out.
drain() stops reading; the requests already read are still answered, then the connection closes.
When the client closes its end (or the connection fails), its waiting Fetch and ShareFetch requests are
cancelled: they only read, and nobody will take their answers. Other requests finish.
SASL (authentication.py) gates each request before its handler runs, and serves its own requests alone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from ...protocol.apis import SUPPORTED_VERSIONS, ApiKey, api_name, client_throttles
from ...protocol.errors import ProtocolError, UnsupportedRequest
from ...protocol.framing import FrameDecoder
from ...protocol.messages import (
    NO_RESPONSE,
    Answer,
    Request,
    RequestHeader,
    decode_request,
    encode_response,
)
from ...protocol.unsupported import unsupported_version_response
from . import authentication
from .limits import ConnectionStats, Limits, Notices
from .refusals import refused
from .response_budget import ResponseBudget, reservation
from .session import RequestScope, Session
from .watchdog import Watchdog

log = logging.getLogger(__name__)

# Runs a request's handler (dispatch.py): the response, or NO_RESPONSE when none is due.
Dispatch = Callable[[Request, RequestScope], Awaitable[Answer]]
READ_CHUNK = 1 << 16
RECANCEL_SECONDS = 0.1  # how soon an abandoned fetch that did not stop is cancelled again
# A request held: its header, what produces its encoded response (None: nothing to send), its frame size.
_Out = bytes | None
_Held = tuple[RequestHeader, asyncio.Future[_Out], int]
# Their answers are only reads, long-polled: cancelled when the client leaves.
_CANCELLABLE = frozenset({ApiKey.FETCH, ApiKey.SHARE_FETCH})

_IDLE = "idle"
_INCOMPLETE_FRAME = "incomplete frame"
_UNREAD_RESPONSE = "unread response"


class Connection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        handle: Dispatch,
        limits: Limits,
        stats: ConnectionStats,
        notices: Notices,
        session: Session,
    ) -> None:
        self.session = session
        self._reader = reader
        self._writer = writer
        self._handle = handle
        self._limits = limits
        self._stats = stats
        self._notices = notices
        self._loop = asyncio.get_running_loop()
        self._decoder = FrameDecoder(authentication.frame_limit(session, limits))
        self._alone: asyncio.Future[_Out] | None = None  # a request served alone (SASL), until answered
        self._alone_api = ""  # its API's name and client id, for the log
        self._alone_client = ""
        self._pending: asyncio.Queue[_Held | None] = asyncio.Queue()  # bounded by the in-flight limits
        self.peer = writer.get_extra_info("peername")
        self._host = f"/{self.peer[0]}" if isinstance(self.peer, tuple) else "/unknown"
        self.held_requests = 0
        self.held_bytes = 0
        self._room = asyncio.Event()  # set when a held request is answered, or response bytes taken
        self._responses = ResponseBudget(limits.max_queued_response_bytes, stats, self._wake)
        self._waits: set[asyncio.Future[_Out]] = set()  # fetches still computing (or waiting for data)
        self._abandoned = False  # the client left: its waiting fetches were cancelled
        self._paused = False  # reading waits for room: our choice, so no frame deadline runs
        self._draining = False
        self._closed = False  # the transport is closed or broken: nothing more goes out
        self._read_task: asyncio.Task[None] | None = None
        self._last_activity = self._loop.time()
        self._frame_started: float | None = None
        self._write_started: float | None = None
        self._awaited: asyncio.Future[_Out] | None = None  # the answer the responder waits for
        self._watchdog = Watchdog(self._loop, self._deadline, self._expire, limits.idle_seconds)

    async def serve(self) -> None:
        self._watchdog.arm(self._loop.time() + self._limits.idle_seconds)
        responder = self._loop.create_task(self._respond())
        self._read_task = self._loop.create_task(self._read_requests())
        try:
            try:
                await self._read_task
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # the broker is stopping without a drain
                # Otherwise drain() or a failure stopped the reading: answer what was read.
            self._frame_started = None  # an unfinished frame is dropped, not waited for
            self._paused = False
            self._pending.put_nowait(None)
            await responder
        finally:
            self._closed = True
            self._watchdog.stop()
            self._read_task.cancel()
            responder.cancel()
            self._close_transport()

    def drain(self) -> None:
        """Stops reading requests; serve() answers those already read, then closes."""
        self._draining = True
        if self._read_task is not None:
            self._read_task.cancel()

    # -- reading ----------------------------------------------------------------------------------
    async def _read_requests(self) -> None:
        while not self._draining and not self._closed:
            try:
                data = await self._reader.read(READ_CHUNK)
            except (ConnectionError, OSError):
                data = b""
            if not data:
                self._abandon()
                return
            now = self._loop.time()
            read_at = time.monotonic()  # the clock the group coordinator keeps (loop.time() may differ)
            self._last_activity = now
            try:
                frames = self._decoder.feed(data)
            except ProtocolError as exc:
                self._notices.log(logging.INFO, "bad input", "closing %s: %s", self.peer, exc)
                return
            if self._decoder.buffered:
                # A frame is under way: it started in this chunk unless it was already waiting.
                if frames or self._frame_started is None:
                    self._frame_started = now
                    self._watchdog.arm_by(now + self._limits.request_timeout_seconds)
            else:
                self._frame_started = None
            # Frames already split off this chunk wait here: at most one read beyond the limits.
            for raw in frames:
                if not self._has_room(len(raw)):
                    await self._wait_for_room(len(raw))
                    if self._closed:
                        return
                if self.session.throttled_until > self._loop.time():
                    await self._mute()
                    if self._closed:
                        return
                request = self._decode(raw)
                if request is False:
                    return
                if isinstance(request, Request):
                    reserve = reservation(request, self._limits.max_queued_response_bytes)
                    if not self._responses.fits(reserve):
                        await self._wait_for_responses(reserve)
                        if self._closed:
                            return
                    if not self._start(request, len(raw), reserve, read_at):
                        return
                if self._alone is not None and not await self._settle_alone():
                    return

    def _has_room(self, size: int) -> bool:
        if not self.held_requests:
            return True  # one request at a time is always served, however large
        lim = self._limits
        return self.held_requests < lim.max_in_flight_requests and (
            self.held_bytes + size <= lim.max_in_flight_bytes
        )

    async def _wait_for_room(self, size: int) -> None:
        """Backpressure: no reading until enough held requests are answered."""
        self._stats.backpressure_pauses += 1
        await self._wait_until(lambda: self._has_room(size))

    async def _wait_for_responses(self, reserve: int) -> None:
        """Backpressure: no request starts (so none is read) until the client takes queued responses."""
        self._stats.response_pauses += 1
        await self._wait_until(lambda: self._responses.fits(reserve))

    async def _wait_until(self, ready: Callable[[], bool]) -> None:
        self._paused = True
        try:
            while not ready() and not self._closed:
                self._room.clear()
                await self._room.wait()
        finally:
            self._paused = False
        self._restart_frame_clock()

    def _wake(self) -> None:
        if self._paused:
            self._room.set()

    async def _mute(self) -> None:
        """KIP-219: no reading while the client's quota throttles it."""
        self._paused = True
        try:
            while not self._closed and (left := self.session.throttled_until - self._loop.time()) > 0:
                await asyncio.sleep(left)
        finally:
            self._paused = False
        self._restart_frame_clock()

    def _restart_frame_clock(self) -> None:
        if self._frame_started is not None:
            # The client could not send while we did not read; its frame's time starts again now.
            self._frame_started = self._loop.time()
            self._watchdog.arm_by(self._frame_started + self._limits.request_timeout_seconds)

    def _decode(self, raw: bytes) -> Request | bool:
        """The request to start; True when it is answered already, False when the frame closes the
        connection."""
        try:
            request = authentication.unframed_request(self.session, raw) or decode_request(raw)
        except UnsupportedRequest as exc:
            if exc.api_key != ApiKey.API_VERSIONS:
                refused(log, api_name(exc.api_key), unsupported_reason(exc), kind="unsupported",
                        client_id=exc.client_id or "", session=self.session,
                        api_key=exc.api_key, api_version=exc.api_version)  # fmt: skip
                return False
            # KIP-511: answer an unknown ApiVersions version with v0 and our ranges.
            header = RequestHeader(exc.api_key, 0, exc.correlation_id, None)
            data = encode_response(header, unsupported_version_response())
            self._responses.settle(0, len(data))
            done: asyncio.Future[_Out] = self._loop.create_future()
            done.set_result(data)
            self._hold(header, done, len(raw))
            return True
        except ProtocolError as exc:
            self._notices.log(logging.INFO, "bad input", "closing %s: %s", self.peer, exc)
            return False
        return request

    def _start(self, request: Request, size: int, reserve: int, read_at: float) -> bool:
        """Starts the request's handler (read_at: when its last bytes were read); False when the request
        closes the connection."""
        header = request.header
        scope = RequestScope(self.session, header.client_id or "", self._host, received_at=read_at)
        why = authentication.refusal(self.session, header.api_key, self._loop.time())
        if why is not None:
            refused(log, _name(header), f"{why}; closing the connection", scope=scope)
            return False
        self._responses.reserve(reserve)
        mine: list[asyncio.Future[_Out]] = []  # the task's own future, for _compute to know itself by
        answer = asyncio.ensure_future(self._compute(request, scope, reserve, mine))
        mine.append(answer)
        if header.api_key in _CANCELLABLE:
            self._waits.add(answer)
            answer.add_done_callback(self._waits.discard)
        self._hold(header, answer, size)
        if authentication.served_alone(self.session, header.api_key):
            self._alone = answer
            self._alone_api = _name(header)
            self._alone_client = scope.client_id
        return True

    async def _settle_alone(self) -> bool:
        """Waits until the request served alone is answered; False when the connection must close."""
        answer, self._alone = self._alone, None
        if answer is not None:
            await asyncio.wait([answer])  # not cancelled with this task: the responder awaits it too
        if self.session.closing is not None:
            reason = f"{self.session.closing}; closing the connection"
            refused(log, self._alone_api, reason, client_id=self._alone_client, session=self.session)
            # Nothing more is read; the close waits a little, so the client reads the answer first
            # and does not reconnect in a tight loop (Kafka's connection.failed.authentication.delay.ms).
            await asyncio.sleep(self._limits.failed_authentication_delay_seconds)
            return False
        self._decoder.max_frame_bytes = authentication.frame_limit(self.session, self._limits)
        return not self._closed

    async def _compute(
        self, request: Request, scope: RequestScope, reserve: int, mine: list[asyncio.Future[_Out]]
    ) -> _Out:
        """Runs the handler and encodes its response here, so its size counts as soon as it exists.
        When the responder already waits for this very answer (every earlier one is out), the answer
        is written from here, a turn of the event loop sooner, and the responder gets None."""
        size = 0
        settled = False
        try:
            body = await self._handle(request, scope)
            if body is NO_RESPONSE:  # acks=0 produce: the client reads no reply
                return None
            try:
                if request.header is authentication.UNFRAMED:
                    data = authentication.encode_unframed(body)  # None: a failed bare token gets no answer
                else:
                    data = encode_response(request.header, body)
            except Exception as exc:
                raise _Unencodable from exc
            size = len(data) if data is not None else 0
            if (
                data is not None
                and self._awaited is mine[0]
                and not self._closed
                and request.header is not authentication.UNFRAMED
            ):
                settled = True
                self._responses.settle(reserve, size)
                try:
                    await self._write(request.header, data)
                finally:
                    self._responses.taken(size)
                return None
            return data
        finally:
            if not settled:
                self._responses.settle(reserve, size)

    def _abandon(self) -> None:
        """The client is gone: its waiting fetches stop now rather than at their max wait."""
        self._abandoned = True
        for answer in list(self._waits):
            if answer.cancel():
                self._stats.abandoned_requests += 1
        if self._waits:
            self._loop.call_later(RECANCEL_SECONDS, self._cancel_again)

    def _cancel_again(self) -> None:
        """Python 3.11's asyncio.wait_for drops a cancel that comes as what it waits for finishes, and
        redis-py waits with it (a fetch that opens a Redis connection): a fetch still running is told
        again, until it stops."""
        for answer in list(self._waits):
            answer.cancel()
        if self._waits:
            self._loop.call_later(RECANCEL_SECONDS, self._cancel_again)

    def _dropped(self, answer: asyncio.Future[_Out]) -> None:
        """A held answer that will not be written: its bytes no longer count."""
        if answer.cancel() or answer.cancelled() or answer.exception() is not None:
            return
        data = answer.result()
        self._responses.taken(len(data) if data is not None else 0)

    def _hold(self, header: RequestHeader, answer: asyncio.Future[_Out], size: int) -> None:
        self.held_requests += 1
        self.held_bytes += size
        st = self._stats
        st.held_requests += 1
        st.held_bytes += size
        st.peak_held_requests = max(st.peak_held_requests, self.held_requests)
        st.peak_held_bytes = max(st.peak_held_bytes, self.held_bytes)
        self._pending.put_nowait((header, answer, size))

    def _release(self, size: int) -> None:
        self.held_requests -= 1
        self.held_bytes -= size
        self._stats.held_requests -= 1
        self._stats.held_bytes -= size
        if not self.held_requests:
            self._last_activity = self._loop.time()  # idle time counts from the last answer
        if self._paused:
            self._room.set()

    # -- answering --------------------------------------------------------------------------------
    async def _respond(self) -> None:
        try:
            while True:
                item = await self._pending.get()
                if item is None:
                    return
                header, answer, size = item
                try:
                    await self._answer(header, answer)
                finally:
                    self._release(size)
        finally:
            # Only a stop without drain gets here with requests left: none of them will be answered.
            while not self._pending.empty():
                left = self._pending.get_nowait()
                if left is not None:
                    self._dropped(left[1])
                    self._release(left[2])

    async def _answer(self, header: RequestHeader, answer: asyncio.Future[_Out]) -> None:
        if self._closed:
            self._dropped(answer)  # nobody will read it
            return
        self._awaited = answer
        try:
            data = await answer
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            if not self._abandoned:  # else we cancelled it: its client has gone
                log.error("handler for %s v%d was cancelled", _name(header), header.api_version)
                self._fail()
            return
        except _Unencodable:
            log.exception("cannot encode %s v%d response", _name(header), header.api_version)
            self._fail()
            return
        except Exception:
            # No error response fits every API; closing makes the client retry elsewhere.
            log.exception("handler for %s v%d failed", _name(header), header.api_version)
            self._fail()
            return
        finally:
            self._awaited = None
        if data is None:
            return
        try:
            await self._write(header, data)
        finally:
            self._responses.taken(len(data))

    async def _write(self, header: RequestHeader, data: bytes) -> None:
        if self.session.throttled_until > self._loop.time() and not client_throttles(
            header.api_key, header.api_version
        ):
            # A client older than KIP-219 does not back off itself: its response waits out the throttle.
            await asyncio.sleep(self.session.throttled_until - self._loop.time())
            if self._closed:
                return
        self._writer.write(data)
        self._write_started = now = self._loop.time()
        self._watchdog.arm_by(now + self._limits.request_timeout_seconds)
        try:
            # Waits while the transport holds more than its high-water mark: the response still counts
            # as queued until then, so a client that does not read stops being read.
            await self._writer.drain()
        except (ConnectionError, OSError):
            self._fail()
        finally:
            self._write_started = None

    def _fail(self, abort: bool = False) -> None:
        """Closes after a failure or a timeout: nothing more is read or answered."""
        self._closed = True
        self._watchdog.stop()
        self._abandon()
        self._room.set()
        if self._read_task is not None:
            self._read_task.cancel()
        if abort:
            self._writer.transport.abort()  # drops what the client did not take
        elif not self._writer.transport.is_closing():
            self._writer.close()  # responses already written still go out

    def _close_transport(self) -> None:
        transport = self._writer.transport
        if not transport.is_closing():
            transport.close()
        try:
            buffered = transport.get_write_buffer_size()
        except AttributeError:  # a TLS transport closed twice drops its protocol (Python 3.11)
            return
        if buffered:
            # close() waits for the buffer to go out; a client that never reads must not keep it.
            self._loop.call_later(self._limits.request_timeout_seconds, transport.abort)

    # -- the watchdog's deadlines ---------------------------------------------------------------
    def _deadline(self) -> tuple[float, str] | None:
        """The earliest deadline in force, with its kind, or None while waiting on our own work."""
        timeout = self._limits.request_timeout_seconds
        found: tuple[float, str] | None = None
        if self._write_started is not None:
            found = (self._write_started + timeout, _UNREAD_RESPONSE)
        if self._frame_started is not None and not self._paused:
            at = self._frame_started + timeout
            if found is None or at < found[0]:
                found = (at, _INCOMPLETE_FRAME)
        if not self.held_requests:
            # A muted client is not idle: it waits for us.
            at = max(self._last_activity, self.session.throttled_until) + self._limits.idle_seconds
            if found is None or at < found[0]:
                found = (at, _IDLE)
        return found

    def _expire(self, kind: str) -> None:
        st = self._stats
        if kind == _IDLE:
            st.closed_idle += 1
            limit = "connections_max_idle_ms"
        elif kind == _INCOMPLETE_FRAME:
            st.closed_incomplete_frame += 1
            limit = "request_timeout_ms"
        else:
            st.closed_unread_response += 1
            limit = "request_timeout_ms"
        self._notices.log(logging.INFO, kind, "closing %s: %s (%s)", self.peer, kind, limit)
        self._fail(abort=True)


def unsupported_reason(exc: UnsupportedRequest) -> str:
    """Why a request the broker cannot read is refused, for the log."""
    bounds = SUPPORTED_VERSIONS.get(exc.api_key)
    if bounds is not None:
        return (
            f"version {exc.api_version} is not supported (this broker serves v{bounds[0]} to v{bounds[1]}); "
            "closing the connection"
        )
    return (
        f"API key {exc.api_key} v{exc.api_version} is not served by this broker (ApiVersions does not "
        "advertise it); closing the connection"
    )


class _Unencodable(Exception):
    """A handler's response that cannot be encoded (the handler itself ran)."""


def _name(header: RequestHeader) -> str:
    return api_name(header.api_key)

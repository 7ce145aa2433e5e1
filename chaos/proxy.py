"""A TCP proxy that simulates network faults on one link of a deployment (chaos/deployment.py puts
one in front of every broker, every Redis node and the S3 store; tests use it on its own too).

A stall holds every byte but keeps connections open (a frozen path); a cut closes them and refuses new
ones. Either lasts until heal().
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass, field


@dataclass(eq=False)
class _Link:
    """One proxied connection: the accepted socket and the one to the target."""

    downstream: socket.socket
    upstream: socket.socket
    pumps_left: int = 2
    lock: threading.Lock = field(default_factory=threading.Lock)


class FaultProxy:
    """Forwards 127.0.0.1:port to 127.0.0.1:target_port until told to fail.

    stall(): bytes are read but held, so both ends see an open, silent connection (a frozen network
    path); heal() delivers what was held, in order, as TCP would once the path comes back, even if an
    end closed its socket meanwhile.
    cut(): every connection is closed and the port refuses new ones until heal() listens again.
    """

    def __init__(self, target_port: int, password: str | None = None, port: int = 0) -> None:
        """port: the one to listen on (0: any free one); a deployment picks it ahead, to advertise it."""
        self.target_port = target_port
        self.password = password  # the target Redis's, for url
        self._state = "flowing"  # or "stalled", "cut"
        self._changed = threading.Condition()
        self._links: set[_Link] = set()
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port = self._listener.getsockname()[1]
        self.faults: list[tuple[str, float, float]] = []  # (kind, started, healed) in time.monotonic()
        self._fault_started = 0.0
        self._listen(self._listener)

    @property
    def url(self) -> str:
        auth = f"default:{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def state(self) -> str:
        """One of flowing, stalled, cut."""
        return self._state

    def stall(self) -> None:
        with self._changed:
            assert self._state == "flowing", self._state
            self._state, self._fault_started = "stalled", time.monotonic()

    def cut(self) -> None:
        with self._changed:
            assert self._state == "flowing", self._state
            self._state, self._fault_started = "cut", time.monotonic()
            links, self._links = list(self._links), set()
            self._changed.notify_all()
        self._disconnect(links)

    def heal(self) -> float:
        """Ends the fault; returns the time.monotonic() at which traffic flows again."""
        with self._changed:
            kind = self._state
            if kind == "flowing":
                return time.monotonic()  # nothing to heal (heal_all heals every proxy)
            if kind == "cut":
                # The same port again, so that clients holding the address reconnect to it.
                self._listener = socket.create_server(("127.0.0.1", self.port))
                self._listen(self._listener)
            self._state = "flowing"
            healed = time.monotonic()
            self.faults.append((kind, self._fault_started, healed))
            self._changed.notify_all()
        return healed

    def close(self) -> None:
        with self._changed:
            self._state = "flowing"
            self._changed.notify_all()
            links, self._links = list(self._links), set()
        self._disconnect(links)

    def _disconnect(self, links: list[_Link]) -> None:
        # shutdown() wakes the threads blocked in accept() and recv(); they close the sockets.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for link in links:
            for s in (link.downstream, link.upstream):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def _listen(self, listener: socket.socket) -> None:
        threading.Thread(target=self._accept, args=(listener,), daemon=True, name="fault-proxy").start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                downstream, _ = listener.accept()
            except OSError:
                return  # cut or closed
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                downstream.close()
                continue
            link = _Link(downstream, upstream)
            with self._changed:
                if self._state == "cut":
                    link_alive = False
                else:
                    self._links.add(link)
                    link_alive = True
            if not link_alive:
                self._close_link(link)
                continue
            for src, dst in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(link, src, dst), daemon=True).start()

    def _pump(self, link: _Link, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(1 << 16):
                with self._changed:
                    # Stalled: hold this chunk; the rest waits in the kernel's buffers, as on a frozen path.
                    self._changed.wait_for(lambda: self._state != "stalled")
                    if link not in self._links:
                        return  # cut meanwhile: what was held is lost
                dst.sendall(data)
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)  # pass the end of stream on; the other way may go on
        except OSError:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_RDWR)
        finally:
            with link.lock:
                link.pumps_left -= 1
                last = link.pumps_left == 0
            if last:
                with self._changed:
                    self._links.discard(link)
                self._close_link(link)

    @staticmethod
    def _close_link(link: _Link) -> None:
        for s in (link.downstream, link.upstream):
            with contextlib.suppress(OSError):
                s.close()

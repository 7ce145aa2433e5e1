"""TCP proxies for fault tests.

DroppingProxy sits between a Kafka client and the broker and drops chosen responses, to force a
producer to retry a batch the broker already appended (idempotence tests). It also records the API
key and version of every request, so with no drops it shows which versions a client chose.
FaultProxy (stalls and cuts of any TCP link) lives in chaos/proxy.py; it is re-exported here for the
tests that import it from this module.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

from chaos.proxy import FaultProxy
from tests.wire import read_exact


def read_frame(sock: socket.socket) -> bytes | None:
    """One whole Kafka frame, size prefix included; None when the peer closes first."""
    head = read_exact(sock, 4)
    if head is None:
        return None
    body = read_exact(sock, struct.unpack(">i", head)[0])
    return None if body is None else head + body


class DroppingProxy:
    def __init__(self, target_port: int, drop_api_key: int, drops: int) -> None:
        self.target_port = target_port
        self.drop_api_key = drop_api_key
        self.drops_left = drops
        self.dropped = 0
        self.requests: list[tuple[int, int]] = []  # (api key, version) of every request, in order
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            api_keys: dict[int, int] = {}
            threading.Thread(
                target=self._pump_requests, args=(client, upstream, api_keys), daemon=True
            ).start()
            threading.Thread(
                target=self._pump_responses, args=(upstream, client, api_keys), daemon=True
            ).start()

    def _pump_requests(self, src: socket.socket, dst: socket.socket, api_keys: dict[int, int]) -> None:
        try:
            while (frame := read_frame(src)) is not None:
                api_key, version, correlation = struct.unpack_from(">hhi", frame, 4)
                api_keys[correlation] = api_key
                with self._lock:
                    self.requests.append((api_key, version))
                dst.sendall(frame)
        except OSError:
            pass
        finally:
            self._close(src, dst)

    def _pump_responses(self, src: socket.socket, dst: socket.socket, api_keys: dict[int, int]) -> None:
        try:
            while (frame := read_frame(src)) is not None:
                (correlation,) = struct.unpack_from(">i", frame, 4)
                if api_keys.pop(correlation, None) == self.drop_api_key:
                    with self._lock:
                        drop = self.drops_left > 0
                        if drop:
                            self.drops_left -= 1
                            self.dropped += 1
                    if drop:  # the broker appended, but the client never hears so: it must retry
                        break
                dst.sendall(frame)
        except OSError:
            pass
        finally:
            self._close(src, dst)

    @staticmethod
    def _close(*socks: socket.socket) -> None:
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self._closed = True
        self._listener.close()


__all__ = ["DroppingProxy", "FaultProxy", "read_frame"]

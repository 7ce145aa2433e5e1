"""A TCP proxy between a Kafka client and the broker that can drop chosen responses.

Used to force a producer to retry a batch the broker already appended (idempotence tests).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading


class DroppingProxy:
    def __init__(self, target_port: int, drop_api_key: int, drops: int) -> None:
        self.target_port = target_port
        self.drop_api_key = drop_api_key
        self.drops_left = drops
        self.dropped = 0
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

    @staticmethod
    def _read_frame(sock: socket.socket) -> bytes | None:
        head = b""
        while len(head) < 4:
            chunk = sock.recv(4 - len(head))
            if not chunk:
                return None
            head += chunk
        (size,) = struct.unpack(">i", head)
        body = b""
        while len(body) < size:
            chunk = sock.recv(size - len(body))
            if not chunk:
                return None
            body += chunk
        return head + body

    def _pump_requests(self, src: socket.socket, dst: socket.socket, api_keys: dict[int, int]) -> None:
        try:
            while (frame := self._read_frame(src)) is not None:
                api_key, _, correlation = struct.unpack_from(">hhi", frame, 4)
                api_keys[correlation] = api_key
                dst.sendall(frame)
        except OSError:
            pass
        finally:
            self._close(src, dst)

    def _pump_responses(self, src: socket.socket, dst: socket.socket, api_keys: dict[int, int]) -> None:
        try:
            while (frame := self._read_frame(src)) is not None:
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

"""The HTTP side of ``agentlab serve`` under the ASGI app: uvicorn's h11 protocol (notebook 00).

Two things the ASGI app cannot do, because they happen before a request reaches it: a deadline
for the request line and headers (a slowloris client that never finishes them is answered 408
and closed), and a JSON 400 (not a dropped connection) for what the HTTP parser itself refuses
(a bad ``Content-Length``, a broken request line). ``error_body`` is the OpenAI-shaped error
text both layers send.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from .strict import api_error

__all__ = ["protocol_class", "error_body", "JSON_HEADERS"]

#: The content type of every error this server writes.
JSON_HEADERS = [(b"content-type", b"application/json")]
_JSON = JSON_HEADERS


def error_body(status: int, message: str, code: str | None = None) -> bytes:
    """An OpenAI-shaped error body (``server_error`` for 5xx, else ``invalid_request_error``)."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return json.dumps(api_error(message, type=kind, code=code)).encode()


def protocol_class(header_timeout_s: float, access_log: Callable[[str], None] | None) -> type:
    """uvicorn's h11 protocol with a header deadline and JSON 400s from the HTTP parser."""
    import h11  # lazy: heavy
    from uvicorn.protocols.http.h11_impl import H11Protocol  # lazy: heavy

    class Protocol(H11Protocol):
        _deadline: Any = None
        _cycle_at_arm: Any = None
        _partial = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            # A request must finish its request line and headers within header_timeout_s of
            # the connection (or of the previous response): a slowloris client is closed.
            self._cycle_at_arm, self._partial = self.cycle, False
            self._deadline = self.loop.call_later(header_timeout_s, self._too_slow)

        def _too_slow(self) -> None:
            if self.cycle is not self._cycle_at_arm or self.transport.is_closing():
                return
            if self._partial:  # part of a request came, too slowly: say so, then close
                body = error_body(408, f"The request headers did not arrive within "
                                        f"{header_timeout_s:g} s.", "request_timeout")
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: "
                                     b"application/json\r\nconnection: close\r\n"
                                     b"content-length: " + str(len(body)).encode()
                                     + b"\r\n\r\n" + body)
                if access_log is not None:
                    peer = self.client or ("-", 0)
                    access_log(f"{peer[0]}:{peer[1]} - - 408 (headers too slow)")
            self.transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._deadline is not None and self.cycle is not self._cycle_at_arm:
                self._deadline.cancel()  # the next request's headers are in
                self._deadline = None
            elif self._deadline is not None:
                self._partial = True

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:  # the HTTP parser refused the request
            body = error_body(400, f"We could not parse your HTTP request: {msg}")
            headers = [*_JSON, (b"content-length", str(len(body)).encode()),
                       (b"connection", b"close")]
            for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                          h11.Data(data=body), h11.EndOfMessage()):
                try:
                    self.transport.write(self.conn.send(event))
                except h11.LocalProtocolError:  # the parser is in an error state: write raw
                    self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-type: "
                                         b"application/json\r\nconnection: close\r\n"
                                         b"content-length: " + str(len(body)).encode()
                                         + b"\r\n\r\n" + body)
                    break
            self.transport.close()
            if access_log is not None:
                peer = self.client or ("-", 0)
                access_log(f"{peer[0]}:{peer[1]} - - 400 (unparsable request: {msg})")

    return Protocol

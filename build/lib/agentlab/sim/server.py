"""``Simulator.serve()``: the simulator as a real HTTP server on 127.0.0.1 (notebook 00).

Any OpenAI-compatible client (the ``openai`` SDK, ``curl``, another language) can talk to it:
``with sim.serve() as url: openai.OpenAI(base_url=url, api_key="x")``. It reuses the in-process
request handling (``Simulator.handle``) unchanged, so replies, faults, latency and the
``requests`` log are identical; streaming replies go out as chunked ``text/event-stream``
writes, flushed one SSE event at a time. A ``"timeout"`` fault stalls the request (until the
client gives up, ``Simulator.stall_s`` passes or the server stops) and then drops it.

Built on the standard library's ``ThreadingHTTPServer`` in a daemon thread: no extra
dependency, and nothing starts until ``serve()`` is entered.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

__all__ = ["serve"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True      # a stalled or streaming request never blocks shutdown
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address, sim):
        super().__init__(address, _Handler)
        self.sim = sim
        self.stopping = threading.Event()

    def handle_error(self, request, client_address) -> None:
        # A client closing a kept-alive connection while the handler waits for its next
        # request is normal (the SDK does it after every stream): not worth a traceback.
        import sys
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked transfer for SSE
    # Headers and body go out in separate writes; without TCP_NODELAY the body waits ~40 ms
    # on Nagle's algorithm plus the client's delayed ACK (22 requests/s instead of hundreds).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - quiet: .requests is the log
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        reply = self.server.sim.handle(method, self.path, raw)
        if reply.action is not None:  # "timeout" / "disconnect": no response at all
            if reply.action == "timeout":
                self.server.stopping.wait(self.server.sim.stall_s)
            self.close_connection = True
            return
        try:
            self.send_response(reply.status)
            for key, value in reply.headers.items():
                self.send_header(key, value)
            if reply.events is None:
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in reply.iter_bytes():  # one SSE event per HTTP chunk, sent at once
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client went away mid-reply
            self.close_connection = True


@contextmanager
def serve(sim, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Run ``sim`` as an HTTP server in a background thread; yield ``http://HOST:PORT/v1``.

    ``port=0`` picks a free port. On exit the server stops accepting, stalled requests are
    released, and the listening socket is closed.
    """
    server = _Server((host, port), sim)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name=f"agentlab-sim-{server.server_port}", daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_port}/v1"
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

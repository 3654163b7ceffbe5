"""``Simulator.serve()`` and ``agentlab serve``: the simulator as a real HTTP server (notebook 00).

Any OpenAI-compatible client (the ``openai`` SDK, ``curl``, another language) can talk to it:
``with sim.serve() as url: openai.OpenAI(base_url=url, api_key="x")``. It answers through the
same ``SimulatedAPI.handle`` as the in-process transport, so replies, faults, latency and the
``requests`` log are identical; streams go out one SSE event per HTTP chunk, as they are made.

Real OpenAI-compatible servers (vLLM, llama.cpp's Python server) are ASGI apps on a well-kept
server; so is this one: a small ASGI app using starlette's request and response classes, on
uvicorn (h11), in a background thread. What that buys, and what is added here:

* a listen backlog of 2048, bound by us, so a port in use is one clear ``ConfigError``;
* a request-size limit (413, checked on ``Content-Length`` before reading and while reading),
  a body-read timeout (408) and a header timeout that closes a connection that never finishes
  its request line and headers (slowloris);
* a budget for the bodies held at once (``body_budget_bytes``, 64 MB): a request waits for its
  share before its body is read, so ten concurrent 30 MB bodies peak at ~0.4 GB, not
  ~1.2 GB (``benchmarks/bench_serve.py --memory``); ``Content-Length`` together with
  ``Transfer-Encoding`` is a 400 at once (the length is ambiguous), not a 408 after 30 s;
* faults and latency per request (headers ``X-Agentlab-Faults``/``X-Agentlab-Latency``, read
  by ``fault_text.overrides``) on a simulator built for it, as ``agentlab serve`` builds one;
* a JSON 400 for every malformed request, including the ones the HTTP parser itself refuses
  (a bad ``Content-Length``, a broken request line; ``protocol.py``): no dropped connection,
  no traceback;
* one access-log line per request: client, method, path, status, milliseconds.

A ``"timeout"`` fault stalls the request (until the client gives up, ``stall_s`` passes or the
server stops) and then drops it; ``"disconnect"`` drops the connection mid-reply, as a real
failure does. Nothing starts until ``serve()`` is entered.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..errors import ConfigError
from .fault_text import FAULTS_HEADER, LATENCY_HEADER, overrides
from .protocol import JSON_HEADERS as _JSON, error_body as _error_body, protocol_class
from .replies import sse

__all__ = ["serve", "build_app", "MAX_BODY_BYTES", "BODY_BUDGET_BYTES", "BACKLOG"]

#: Largest request body accepted (bytes); larger ones get a 413 without being read.
MAX_BODY_BYTES = 32 * 1024 * 1024
#: Request bodies held at once (bytes): ten concurrent 30 MB bodies wait their turn.
BODY_BUDGET_BYTES = 64 * 1024 * 1024
#: Listen backlog: connections the kernel queues while the server is busy.
BACKLOG = 2048
_QUIET = ("ASGI callable returned without completing response.",)  # our deliberate drops


class _TooLarge(Exception):
    pass


class _Budget:
    """Bytes of request bodies held at once (read, parsed, answered); 0: no bound.

    A request takes its declared ``Content-Length`` (a chunked one, whose size is unknown,
    ``max_body_bytes``) before its body is read and gives it back once the simulator has
    answered; one that does not fit waits in its socket's buffer, not in our memory. A body
    alone is always let in, so a budget below ``max_body_bytes`` cannot block forever."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0
        self._cond: asyncio.Condition | None = None  # made on the server's loop

    async def take(self, n: int) -> int:
        if self.limit <= 0:
            return 0
        self._cond = self._cond or asyncio.Condition()
        async with self._cond:
            await self._cond.wait_for(lambda: self.used == 0 or self.used + n <= self.limit)
            self.used += n
        return n

    async def give(self, n: int) -> None:
        if n and self._cond is not None:
            async with self._cond:
                self.used -= n
                self._cond.notify_all()


def build_app(sim: Any, *, access_log: Callable[[str], None] | None = None,
              max_body_bytes: int = MAX_BODY_BYTES, body_timeout_s: float = 30.0,
              stopping: threading.Event | None = None,
              body_budget_bytes: int = BODY_BUDGET_BYTES,
              request_log_limit: int | None = None) -> Callable:
    """The ASGI app answering every path through ``sim.handle`` (usable with any ASGI server).

    ``request_log_limit``: keep only the last N entries of ``sim.requests`` (None: all; a
    long-running server that nobody reads the log of, such as ``agentlab serve``, keeps 0)."""
    import anyio  # lazy: heavy
    from starlette.concurrency import run_in_threadpool  # lazy: heavy
    from starlette.requests import ClientDisconnect, Request  # lazy: heavy

    stopping = stopping or threading.Event()
    budget = _Budget(body_budget_bytes)

    async def read_body(request: Request) -> bytearray:
        body = bytearray()  # one buffer, grown in place: no list of pieces joined at the end
        async for piece in request.stream():
            if len(body) + len(piece) > max_body_bytes:
                raise _TooLarge(len(body) + len(piece))
            body += piece
        return body

    async def read_and_handle(request: Request) -> Any:
        """Read the body within the budget and have the simulator answer it."""
        declared = request.headers.get("content-length")
        size = int(declared) if declared is not None and declared.isdigit() else max_body_bytes
        if size > max_body_bytes:
            raise _TooLarge(size)
        taken = await budget.take(size)
        try:
            with anyio.fail_after(body_timeout_s):
                raw = await read_body(request)
            reply = await run_in_threadpool(sim.handle, request.method, request.url.path, raw)
        finally:
            await budget.give(taken)
        if request_log_limit is not None and len(sim.requests) > request_log_limit:
            del sim.requests[:len(sim.requests) - request_log_limit]  # bodies held by the log
        return reply

    async def answer(request: Request, send: Callable, note: dict) -> None:
        async def start(status: int, headers: list) -> None:
            note["status"] = status
            await send({"type": "http.response.start", "status": status, "headers": headers})

        async def whole(status: int, body: bytes, headers: list = _JSON) -> None:
            await start(status, [*headers, (b"content-length", str(len(body)).encode())])
            await send({"type": "http.response.body", "body": body})

        if "content-length" in request.headers and "transfer-encoding" in request.headers:
            return await whole(400, _error_body(400, "The request has both Content-Length and "
                                                "Transfer-Encoding: its length is ambiguous "
                                                "(RFC 9112, 6.3); send one of them."),
                               [*_JSON, (b"connection", b"close")])  # the framing is unknown
        try:
            with overrides(request.headers.get(FAULTS_HEADER),
                           request.headers.get(LATENCY_HEADER)):
                reply = await read_and_handle(request)
        except ValueError as bad:  # the per-request faults or latency header
            return await whole(400, _error_body(400, f"Bad {FAULTS_HEADER} or {LATENCY_HEADER} "
                                                f"header: {bad}"))
        except _TooLarge as big:
            return await whole(413, _error_body(413, f"Request body too large: {big.args[0]} "
                                                f"bytes; this server accepts at most "
                                                f"{max_body_bytes} bytes.", "request_too_large"))
        except TimeoutError:
            return await whole(408, _error_body(408, f"The request body did not arrive within "
                                                f"{body_timeout_s:g} s.", "request_timeout"))
        except ClientDisconnect:
            note["status"] = "client gone"
            return
        headers = [(k.lower().encode(), str(v).encode()) for k, v in reply.headers.items()]
        if reply.action is not None:  # "timeout" / "disconnect": no complete response at all
            if reply.action == "timeout":
                t_end = time.monotonic() + sim.stall_s
                while time.monotonic() < t_end and not stopping.is_set():
                    await anyio.sleep(0.05)
            note["status"] = f"{reply.action} (dropped)"
            await start(200, list(_JSON))  # started, never finished: the client sees a drop
            return
        if reply.events is None:
            return await whole(reply.status, reply.body, headers)
        await start(reply.status, headers)
        for event, n_tokens in reply.events:  # paced here with async sleeps: no thread per chunk
            delay = reply.pace(n_tokens) if reply.pace is not None and n_tokens else 0.0
            if delay > 0:
                await anyio.sleep(delay)
            await send({"type": "http.response.body", "body": sse(event), "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    async def app(scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return  # lifespan and websockets are switched off; ignore anything else
        request = Request(scope, receive)
        note: dict = {"status": "-"}
        t0 = time.perf_counter()
        try:
            await answer(request, send, note)
        except Exception as exc:  # never a traceback for the client: a JSON 500 if still possible
            if note["status"] == "-":
                body = _error_body(500, f"agentlab.sim server error: {type(exc).__name__}: {exc}")
                note["status"] = 500
                await send({"type": "http.response.start", "status": 500,
                            "headers": [*_JSON, (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
        finally:
            if access_log is not None:
                client = scope.get("client") or ("-", 0)
                access_log(f'{client[0]}:{client[1]} {scope.get("method", "-")} '
                           f'{scope.get("path", "-")} {note["status"]} '
                           f'{(time.perf_counter() - t0) * 1000:.1f} ms')

    return app


class _Quiet(logging.Filter):
    """uvicorn's own log: forward warnings to the access log, drop our deliberate drops."""

    def __init__(self, sink: Callable[[str], None] | None) -> None:
        super().__init__()
        self.sink = sink

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if self.sink is not None and record.levelno >= logging.WARNING and text not in _QUIET \
                and not text.startswith("Invalid HTTP request"):  # already logged as a 400
            self.sink(f"server: {text}")
        return False


def _bind(host: str, port: int, backlog: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say they are TCP; without
    # it a reply's headers and body go out as two segments and the body waits ~40 ms for the
    # client's delayed ACK (Nagle), capping a keep-alive connection at ~20 requests/s.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError("port_in_use", f"port {port} on {host} is already in use: stop the "
                              "other server or pick another port (--port)") from None
        raise ConfigError("bind_failed", f"cannot listen on {host}:{port}: "
                          f"{exc.strerror or exc}") from None
    sock.listen(backlog)
    return sock


@contextmanager
def serve(sim: Any, host: str = "127.0.0.1", port: int = 0, *,
          access_log: Callable[[str], None] | None = None, max_body_bytes: int = MAX_BODY_BYTES,
          header_timeout_s: float = 10.0, body_timeout_s: float = 30.0,
          backlog: int = BACKLOG, body_budget_bytes: int = BODY_BUDGET_BYTES,
          request_log_limit: int | None = None) -> Iterator[str]:
    """Run ``sim`` as an HTTP server in a background thread; yield ``http://HOST:PORT/v1``.

    ``port=0`` picks a free port; a port in use raises ``ConfigError`` (code ``port_in_use``).
    ``access_log`` receives one line per request. On exit the server stops accepting, stalled
    requests are released, and the listening socket is closed.
    """
    import uvicorn  # lazy: heavy

    sock = _bind(host, port, backlog)
    stopping = threading.Event()
    app = build_app(sim, access_log=access_log, max_body_bytes=max_body_bytes,
                    body_timeout_s=body_timeout_s, stopping=stopping,
                    body_budget_bytes=body_budget_bytes, request_log_limit=request_log_limit)
    config = uvicorn.Config(app, http=protocol_class(header_timeout_s, access_log), ws="none",
                            lifespan="off", log_config=None, access_log=False, backlog=backlog,
                            timeout_keep_alive=5, timeout_graceful_shutdown=2)
    quiet = _Quiet(access_log)
    loggers = [logging.getLogger(n) for n in ("uvicorn", "uvicorn.error", "uvicorn.access")]
    for lg in loggers:
        lg.addFilter(quiet)
    server = uvicorn.Server(config)
    bound = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name=f"agentlab-sim-{bound}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        if not server.started:
            raise ConfigError("server_failed", f"the simulator's server did not start on "
                              f"{host}:{bound}")
        shown = f"[{host}]" if ":" in host else host
        yield f"http://{shown}:{bound}/v1"
    finally:
        stopping.set()
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        for lg in loggers:
            lg.removeFilter(quiet)

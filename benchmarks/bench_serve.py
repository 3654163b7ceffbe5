"""Load test of ``agentlab serve``: 500 concurrent requests on loopback (issue 11).

    python benchmarks/bench_serve.py              # about 40 s
    python benchmarks/bench_serve.py --quick      # 200 requests per round
    python benchmarks/bench_serve.py --memory     # ten concurrent 30 MB bodies: peak RSS (issue 21)

Each server runs in its own process on 127.0.0.1; one asyncio client opens all the connections
at once (each sends one chat-completions request with ``Connection: close`` and reads the whole
reply), then counts what came back. Two servers, measured in the same run:

* ``agentlab serve`` — uvicorn + starlette, backlog 2048 (``agentlab/sim/server.py``);
* a stdlib ``ThreadingHTTPServer`` calling the same ``SimulatedAPI.handle`` — what
  ``Simulator.serve()`` was before: the default listen backlog of 5, a thread per connection.

Columns: replies with status 200, connections reset or refused (no HTTP reply at all), requests
with no reply within 15 s (a SYN dropped by a full listen queue is retried by the kernel with
growing delays), other failures, wall time for the round, and successful requests per second.

``--memory`` (issue 21): ten connections each send a 30 MB request body at once to
``agentlab serve``, with its body budget (``--body-budget-mb``, the default) and without it
(``--body-budget-mb 0``: every body read and parsed at once, as before). Columns: the server's
resident memory before the round, its peak (``VmHWM``) and what stays resident after; statuses.
Linux only (``/proc``).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}).encode()
TIMEOUT_S = 15.0  # per request; bounds a round against a server that drops connections
STREAM = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
                     "stream": True}).encode()


def request(body: bytes) -> bytes:
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
            b"application/json\r\nConnection: close\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)


# -- the baseline server (run with --baseline PORT in a child process) ---------------------------

def run_baseline(port: int) -> None:
    from agentlab import sim
    simulator = sim.Simulator(sim.ToolUser())

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            reply = simulator.handle("POST", self.path, raw)
            self.send_response(reply.status)
            for k, v in reply.headers.items():
                self.send_header(k, v)
            if reply.events is None:
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in reply.iter_bytes():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)  # request_queue_size = 5
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


# -- the load generator --------------------------------------------------------------------------

async def one(port: int, payload: bytes, timeout: float) -> str:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
        writer.write(payload)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout)
        writer.close()
    except (ConnectionResetError, ConnectionRefusedError, BrokenPipeError):
        return "reset"
    except asyncio.TimeoutError:
        return "timeout"  # e.g. the SYN dropped by a full listen queue and never answered
    except OSError:
        return "failed"
    if not data:
        return "reset"  # accepted, then closed without a reply
    return "ok" if data.startswith(b"HTTP/1.1 200") else "failed"


async def round_(port: int, n: int, payload: bytes, timeout: float) -> tuple[dict, float]:
    t0 = time.perf_counter()
    results = await asyncio.gather(*(one(port, payload, timeout) for _ in range(n)))
    wall = time.perf_counter() - t0
    return {k: results.count(k) for k in ("ok", "reset", "timeout", "failed")}, wall


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd: list[str], ready: str) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 30
    for line in proc.stdout:
        if ready in line or time.monotonic() > deadline:
            break
    return proc


def big_request(mb: float) -> bytes:
    """A valid chat request whose ``user`` field makes it ``mb`` megabytes."""
    return request(json.dumps({"model": "gpt-4o", "user": "u" * int(mb * 2**20),
                               "messages": [{"role": "user", "content": "hi"}]}).encode())


def rss_mb(pid: int) -> dict[str, float]:
    """``VmRSS`` and ``VmHWM`` (peak) of a process, in MB, from ``/proc``."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


async def send_big(port: int, payload: bytes, timeout: float) -> str:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
        writer.write(payload)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout)
        writer.close()
    except (OSError, asyncio.TimeoutError) as exc:
        return type(exc).__name__
    return data[9:12].decode() or "no reply"


def memory(n: int = 10, mb: float = 30.0) -> int:
    """Peak resident memory of ``agentlab serve`` for ``n`` concurrent ``mb`` MB bodies."""
    payload = big_request(mb)
    print(f"{n} concurrent {mb:g} MB request bodies to agentlab serve (MB of server memory)")
    print(f"{'body budget':24} {'before':>7} {'peak':>7} {'after':>7} {'wall s':>7}  statuses")
    for label, budget in (("none (--body-budget-mb 0)", ["--body-budget-mb", "0"]),
                          ("default", [])):
        port = free_port()
        proc = start([sys.executable, "-m", "agentlab.cli", "serve", "--port", str(port),
                      "--quiet", "--policy", "tooluser", *budget], "listening on")
        try:
            asyncio.run(round_(port, 3, request(BODY), 30))  # warm-up: encodings loaded
            before = rss_mb(proc.pid)["VmRSS"]
            t0 = time.perf_counter()
            statuses = asyncio.run(_gather_big(port, payload, n))
            wall = time.perf_counter() - t0
            time.sleep(0.5)
            mem = rss_mb(proc.pid)
            counts = {s: statuses.count(s) for s in sorted(set(statuses))}
            print(f"{label:24} {before:7.0f} {mem['VmHWM']:7.0f} {mem['VmRSS']:7.0f} "
                  f"{wall:7.2f}  {counts}")
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    return 0


async def _gather_big(port: int, payload: bytes, n: int) -> list[str]:
    return list(await asyncio.gather(*(send_big(port, payload, 120) for _ in range(n))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--memory", action="store_true", help="peak memory, 10 x 30 MB bodies")
    ap.add_argument("--baseline", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.baseline:
        run_baseline(args.baseline)
        return 0
    if args.memory:
        return memory()
    n = 200 if args.quick else 500
    try:  # the 500 client sockets and the server's must fit the open-file limit
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 4096), hard), hard))
    except (ImportError, ValueError, OSError):
        pass
    servers = {
        "agentlab serve (uvicorn)": lambda p: [sys.executable, "-m", "agentlab.cli", "serve",
                                               "--port", str(p), "--quiet", "--policy", "tooluser"],
        "stdlib ThreadingHTTPServer": lambda p: [sys.executable, __file__, "--baseline", str(p)],
    }
    print(f"{n} concurrent requests per round on 127.0.0.1 (one connection each)")
    print(f"{'server':28} {'kind':7} {'200':>5} {'reset':>6} {'timeout':>8} {'failed':>7} "
          f"{'wall s':>7} {'req/s':>7}")
    print("-" * 81)
    rates: dict[str, float] = {}
    resets: dict[str, int] = {}
    for name, cmd in servers.items():
        port = free_port()
        proc = start(cmd(port), "ready" if "stdlib" in name else "listening on")
        try:
            asyncio.run(round_(port, 5, request(BODY), 30))  # warm-up: encodings loaded
            for kind, body in (("chat", BODY), ("stream", STREAM)):
                counts, wall = asyncio.run(round_(port, n, request(body), TIMEOUT_S))
                rate = counts["ok"] / wall
                rates[f"{name}/{kind}"] = rate
                resets[f"{name}/{kind}"] = counts["reset"]
                print(f"{name:28} {kind:7} {counts['ok']:5} {counts['reset']:6} "
                      f"{counts['timeout']:8} {counts['failed']:7} {wall:7.2f} {rate:7.0f}")
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    ours = [v for k, v in resets.items() if k.startswith("agentlab")]
    print(f"\nagentlab serve: {sum(ours)} resets in {2 * n} requests; "
          f"chat {rates['agentlab serve (uvicorn)/chat']:.0f} req/s, "
          f"stream {rates['agentlab serve (uvicorn)/stream']:.0f} req/s")
    return 0 if sum(ours) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""``agentlab serve`` / ``Simulator.serve()`` under load and bad input (issue 11).

Everything here talks to 127.0.0.1 only, with raw sockets where the point is what a client
library would never send.
"""
from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from agentlab import sim
from agentlab.errors import ConfigError, ProviderError
from agentlab.llm import LLMClient, collect_stream

BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def raw(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Send ``data`` on a fresh connection; everything the server sent until it closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        except (socket.timeout, ConnectionResetError):
            chunks.append(b"<no clean close>")
    return b"".join(chunks)


def post(body: bytes, extra: bytes = b"", path: bytes = b"/v1/chat/completions",
         length: bytes | None = None) -> bytes:
    length = str(len(body)).encode() if length is None else length
    return (b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\n" + extra + b"Content-Length: " + length + b"\r\n\r\n" + body)


def parse(response: bytes) -> tuple[int, dict | None]:
    head, _, body = response.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


@pytest.fixture
def served():
    log: list[str] = []
    s = sim.Simulator([sim.text("hello")] * 50)
    with s.serve(access_log=log.append, max_body_bytes=64 * 1024, header_timeout_s=0.5,
                 body_timeout_s=1.0) as url:
        yield s, port_of(url), log


def test_every_malformed_request_gets_a_json_error_not_a_dropped_connection(served):
    _, port, log = served
    cases = {
        b"1e11": 400, b"abc": 400, b"-5": 400,                  # Content-Length the parser refuses
        b"100000000000": 413,                                   # declared too large: never read
    }
    for length, want in cases.items():
        status, body = parse(raw(port, post(b"", length=length)))
        assert status == want and body["error"]["message"], (length, status, body)
    status, body = parse(raw(port, post(b"{" * 70_000)))         # read until over the limit
    assert (status, body["error"]["code"]) == (413, "request_too_large")
    status, body = parse(raw(port, b"NOT HTTP AT ALL\r\n\r\n"))
    assert status == 400 and "could not parse your HTTP request" in body["error"]["message"]
    assert any(" 400 (unparsable request" in line for line in log)


def test_deep_json_and_bad_json_are_400s():
    s = sim.Simulator([sim.text("ok")])
    with s.serve() as url:
        for junk in (b"[" * 100_000, b"{not json", "é".encode("latin-1"), b"null", b"[1, 2]"):
            status, body = parse(raw(port_of(url), post(junk)))
            assert status == 400 and "parse the JSON body" in body["error"]["message"], junk[:10]


def test_slow_headers_get_a_408_and_the_connection_is_closed(served):
    _, port, log = served
    t0 = time.monotonic()
    out = raw(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")  # never finishes
    assert time.monotonic() - t0 < 3 and parse(out)[0] == 408
    t0 = time.monotonic()
    out = raw(port, post(b'{"model": "gpt-4o"', length=b"500"))  # body never completes
    assert time.monotonic() - t0 < 4 and parse(out)[0] == 408
    assert any("408" in line for line in log)


def test_access_log_has_one_line_per_request_with_method_path_status_and_ms(served):
    _, port, log = served
    with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0) as c:
        c.chat.completions.create(**BODY)
        list(c.chat.completions.create(**BODY, stream=True))
        with pytest.raises(openai.NotFoundError):
            c.embeddings.create(model="x", input="y")
    deadline = time.monotonic() + 5  # a line is written once its reply has been sent
    while len([line for line in log if " ms" in line]) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    lines = [line for line in log if " ms" in line]
    assert len(lines) == 3
    assert " POST /v1/chat/completions 200 " in lines[0] and lines[0].endswith(" ms")
    assert " POST /v1/embeddings 404 " in lines[2]


def test_many_concurrent_connections_are_all_answered():
    s = sim.Simulator([sim.text("ok")] * 10)
    request = post(json.dumps(BODY).encode())
    with s.serve() as url:
        port = port_of(url)
        socks = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(300)]
        for sock in socks:  # all connected before any is served: the backlog holds them
            sock.sendall(request)

        def read(sock):
            with sock:
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
                return parse(data)[0]
        with ThreadPoolExecutor(32) as pool:
            statuses = list(pool.map(read, socks))
    assert statuses == [200] * 300 and len(s.requests) == 300


def test_a_port_in_use_is_one_clear_error():
    s = sim.Simulator()
    with s.serve() as url:
        port = port_of(url)
        with pytest.raises(ConfigError) as info:
            with s.serve(port=port):
                pass
        assert info.value.code == "port_in_use" and f"port {port}" in info.value.message
        out = subprocess.run([sys.executable, "-m", "agentlab.cli", "serve", "--port", str(port)],
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr
    assert out.stdout.strip() == (f"agentlab serve: port {port} on 127.0.0.1 is already in use: "
                                  "stop the other server or pick another port (--port)")


def test_faults_over_http_drop_the_connection_or_cut_the_stream():
    s = sim.Simulator([sim.text("a long answer " * 20)] * 5,
                      faults=["disconnect", "truncated_stream", None])
    with s.serve() as url, openai.OpenAI(base_url=url, api_key="x", max_retries=0) as c:
        with pytest.raises(openai.APIConnectionError):
            c.chat.completions.create(**BODY)
        chunks = list(c.chat.completions.create(**BODY, stream=True))
        assert chunks and not any(ch.choices and ch.choices[0].finish_reason for ch in chunks)
        assert c.chat.completions.create(**BODY).choices[0].message.content


# -- a bounded fuzz of the HTTP server (loopback only) -------------------------------------------

def _mutations(rng: random.Random):
    good = json.dumps(BODY).encode()
    junk_values = [None, 0, -1, 1e308, "", "x" * 3000, [], {}, [None], {"a": [1, {"b": None}]},
                   True, "\u0000", "🙂" * 50, [[[[[]]]]]]
    fields = ["model", "messages", "tools", "tool_choice", "temperature", "stream", "max_tokens",
              "stream_options", "n", "top_p", "parallel_tool_calls"]
    for _ in range(120):
        body = json.loads(good)
        for _ in range(rng.randint(1, 3)):
            where = rng.choice(fields + ["content", "role", "tool_calls"])
            value = rng.choice(junk_values)
            if where in ("content", "role", "tool_calls"):
                body["messages"] = [dict(body["messages"][0], **{where: value})] \
                    if isinstance(body.get("messages"), list) and body["messages"] \
                    and isinstance(body["messages"][0], dict) else value
            else:
                body[where] = value
        yield post(json.dumps(body).encode())
    for _ in range(60):  # byte-level damage to a valid request
        req = bytearray(post(good))
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(req))
            req[i] = rng.randrange(256)
        yield bytes(req)
    yield post(b"", path=b"/v1/%ff%fe")
    yield b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    yield b"DELETE /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


@pytest.mark.parametrize("strict", [True, False])
def test_fuzzed_requests_always_get_an_http_answer_with_json(strict):
    s = sim.Simulator(sim.Auto(), strict=strict)
    rng = random.Random(11)
    with s.serve(header_timeout_s=0.5, body_timeout_s=0.5) as url:
        port = port_of(url)
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda req: raw(port, req, timeout=5), _mutations(rng)))
        status, body = parse(raw(port, post(json.dumps(BODY).encode())))
    assert status == 200 and body["choices"]  # still serving
    def answered(a: bytes) -> bool:
        if not a.startswith(b"HTTP/1.1 "):
            return False
        status, body = parse(a)
        streamed = b"text/event-stream" in a.partition(b"\r\n\r\n")[0] and b"data: " in a
        return status < 500 and (body is not None or streamed)
    assert [a[:160] for a in answers if not answered(a)] == []


# -- the README's real-endpoint path -------------------------------------------------------------

def test_agentlab_demo_against_agentlab_serve_finishes_the_research_task(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("OPENAI_API_KEY", None)
    server = subprocess.Popen([sys.executable, "-m", "agentlab.cli", "serve", "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(server.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while not any("listening on" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
        demo_env = {**env, "OPENAI_API_KEY": "x", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
        demo = subprocess.run([sys.executable, "-m", "agentlab.cli", "demo", "--output-dir",
                               str(tmp_path)], capture_output=True, text=True, env=demo_env,
                              timeout=120)
    finally:
        server.terminate()
        server.wait(timeout=10)
        reader.join(timeout=5)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "completed (finished)" in demo.stdout and "Report written to" in demo.stdout
    assert list(tmp_path.glob("*-report.md"))
    posts = [line for line in lines if " POST /v1/chat/completions 200 " in line]
    assert len(posts) == 6  # search, read two, search, read, write; then the answer


# -- issue 21: bounded bodies, conflicting framing, a test endpoint for any framework ----------

def test_content_length_with_chunked_encoding_is_a_400_at_once(served):
    _, port, _ = served
    t0 = time.monotonic()
    data = raw(port, post(b"5\r\nhello\r\n0\r\n\r\n", extra=b"Transfer-Encoding: chunked\r\n"))
    status, body = parse(data)
    assert status == 400 and time.monotonic() - t0 < 2.0  # was a 408 after the body timeout
    assert "both Content-Length and Transfer-Encoding" in body["error"]["message"]


def test_bodies_beyond_the_budget_wait_their_turn_and_all_are_answered():
    s = sim.Simulator([sim.text("ok")] * 20)
    big = json.dumps({**BODY, "user": "u" * 5000}).encode()
    with s.serve(body_budget_bytes=len(big) + 100, request_log_limit=3) as url:  # one at a time
        with ThreadPoolExecutor(8) as pool:
            replies = list(pool.map(lambda _: parse(raw(port_of(url), post(big)))[0], range(8)))
        assert replies == [200] * 8 and len(s.requests) == 3  # the log keeps the last 3
    with sim.Simulator([sim.text("ok")]).serve(body_budget_bytes=10) as url:  # alone: let in
        assert parse(raw(port_of(url), post(big)))[0] == 200


@pytest.fixture(scope="module")
def endpoint():
    """A real ``agentlab serve`` process: a 429 with Retry-After first, then no faults."""
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    number = port.getsockname()[1]
    port.close()
    proc = subprocess.Popen([sys.executable, "-m", "agentlab.cli", "serve", "--port", str(number),
                             "--policy", "tooluser", "--faults", "429,retry_after=1;ok",
                             "--stall-s", "0.2"], stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if "Ctrl-C to stop" in line:  # the banner's last line: the access log follows
            break
    yield f"http://127.0.0.1:{number}/v1", proc
    proc.terminate()
    proc.wait(10)


TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ASK = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Weather in Paris?"}],
       "tools": [TOOL]}


def test_the_plain_openai_sdk_sees_a_429_with_retry_after_and_its_retry_honours_it(endpoint):
    url, proc = endpoint
    with openai.OpenAI(base_url=url, api_key="x", max_retries=1) as client:
        t0 = time.monotonic()
        raw_reply = client.chat.completions.with_raw_response.create(**ASK)
        waited = time.monotonic() - t0
    assert raw_reply.retries_taken == 1 and waited >= 1.0  # Retry-After: 1, honoured
    assert raw_reply.parse().choices[0].message.tool_calls[0].function.name == "get_weather"
    log = [next(proc.stdout) for _ in range(2)]
    assert [line.split()[3] for line in log] == ["429", "200"]


def test_a_truncated_stream_per_request_header(endpoint):
    url, _ = endpoint
    cut = {"X-Agentlab-Faults": "truncate"}
    with openai.OpenAI(base_url=url, api_key="x", max_retries=0, default_headers=cut) as c:
        chunks = list(c.chat.completions.create(**ASK, stream=True))  # the plain SDK: no error
        assert chunks and not any(ch.choices and ch.choices[0].finish_reason for ch in chunks)
        llm = LLMClient(client=c, max_retries=1, retry_base_delay=0)
        with pytest.raises(ProviderError) as info:  # agentlab: typed, retried, then given up
            collect_stream(llm.stream(ASK["messages"], tools=ASK["tools"]))
    assert info.value.code == "provider_unavailable" and info.value.details["attempts"] == 2
    assert "closed before it was complete" in info.value.message


@pytest.mark.parametrize("header, check", [
    ("refusal", lambda r: r.choices[0].message.refusal and r.choices[0].message.content is None),
    ("503", openai.InternalServerError), ("401", openai.AuthenticationError),
    ("timeout", openai.APIConnectionError), ("error_in_body", None)])
def test_faults_chosen_per_request_by_header(endpoint, header, check):
    url, _ = endpoint
    with openai.OpenAI(base_url=url, api_key="x", max_retries=0,
                       default_headers={"X-Agentlab-Faults": header}) as c:
        if isinstance(check, type):
            with pytest.raises(check):
                c.chat.completions.create(**BODY)
        elif check is None:  # a 200 carrying an error object: the plain SDK gives no choices
            assert not c.chat.completions.create(**BODY).choices
        else:
            assert check(c.chat.completions.create(**BODY))


def test_a_bad_fault_header_or_option_is_refused_saying_why(endpoint, capsys):
    url, _ = endpoint
    with openai.OpenAI(base_url=url, api_key="x", max_retries=0,
                       default_headers={"X-Agentlab-Faults": "429:2"}) as c:
        with pytest.raises(openai.BadRequestError) as info:
            c.chat.completions.create(**BODY)
    assert "is not in [0, 1]" in str(info.value)
    from agentlab.cli import main
    assert main(["serve", "--faults", "teapot:0.1"]) == 2
    assert "unknown fault 'teapot'" in capsys.readouterr().out


def test_fault_text_reads_a_seeded_mix_a_script_and_latency():
    from agentlab.sim.fault_text import parse_faults, parse_latency
    mix = lambda: parse_faults("429:0.3,retry_after=2;truncate:0.2;refusal:0.1", seed=3)  # noqa: E731
    a, b = mix(), mix()
    draws = [a.next() for _ in range(2000)]
    assert draws[:50] == [b.next() for _ in range(50)]  # seeded: the same sequence
    kinds = [d.kind if d else "ok" for d in draws]
    assert abs(kinds.count("rate_limit") / 2000 - 0.3) < 0.04 and kinds.count("refusal") > 100
    assert next(d for d in draws if d and d.kind == "rate_limit").retry_after == 2.0
    script = parse_faults("500;ok;malformed")
    assert [s.kind if s else None for s in (script.next() for _ in range(4))] == [
        "server_error", None, "malformed_arguments", None]
    assert parse_latency("first_token_ms=300,time_scale=0.5") == sim.Latency(300, time_scale=0.5)
    for bad in ("429:0.5;truncate", "429,wait=2", "teapot"):
        with pytest.raises(ValueError):
            parse_faults(bad)


def test_latency_per_request_header(endpoint):
    url, _ = endpoint
    slow = {"X-Agentlab-Latency": "first_token_ms=600,jitter=0,tokens_per_second=0",
            "X-Agentlab-Faults": "ok"}  # whatever the server's script still holds
    with openai.OpenAI(base_url=url, api_key="x", max_retries=0, default_headers=slow) as c:
        t0 = time.monotonic()
        assert c.chat.completions.create(**BODY).choices[0].message.content
        assert time.monotonic() - t0 >= 0.6  # the header's time to first token was waited
        with pytest.raises(openai.BadRequestError) as info:
            c.chat.completions.create(**BODY, extra_headers={"X-Agentlab-Latency": "speed=9"})
    assert "bad latency item 'speed=9'" in str(info.value)

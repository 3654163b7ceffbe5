"""The simulated API: an OpenAI-compatible chat-completions endpoint in-process (notebook 00).

``SimulatedAPI`` answers ``POST /v1/chat/completions`` like the real API: it validates the
request (strict mode), asks its policy what to say, counts ``usage`` with tiktoken, and returns
a ChatCompletion or an SSE stream. Faults and latency are layered on top. The same handler
serves the in-process transport (``.client()``: the real ``openai`` SDK over an
``httpx2.MockTransport``) and the real HTTP server (``.serve()``, see ``server.py``).

``agentlab.sim.Simulator`` is this class plus the chapter-01 shortcut ``.llm()``
(``agentlab/sim/simulator.py``); ``LLMClient.from_env`` uses this class directly, so the client
module and the simulator never import each other in a circle.

Order of work per request: route -> parse JSON -> draw the fault (HTTP-error faults answer
here) -> strict validation -> policy -> reply (+ malformed/truncated faults) -> latency.
"""
from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .replies import CREATED, completion, sse, stream_events
from .faults import FaultPlan, Faults, FaultSpec, Latency, fault_response
from .policies import Call, Function, Policy, Script, ToolUser, normalize_reply
from .strict import SimulatorHTTPError, api_error, check_request
from ..models import DEFAULT_MODEL

__all__ = ["SimulatedAPI", "SimReply", "MODELS"]

#: Models listed by ``GET /v1/models`` (any model name is accepted by chat completions).
MODELS = ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o3-mini")


@dataclass
class SimReply:
    """What the handler decided; the transport or the HTTP server puts it on the wire.

    ``body`` for a complete reply, ``events`` (+ pacing) for SSE, or ``action`` ``"timeout"`` /
    ``"disconnect"`` when no reply is sent at all.
    """
    status: int
    headers: dict = field(default_factory=dict)
    body: bytes = b""
    events: list | None = None
    action: str | None = None
    pace: Callable[[int], float] | None = None  # seconds to sleep before a chunk of n tokens

    def iter_bytes(self) -> Iterator[bytes]:
        """The SSE lines of a streaming reply, sleeping between chunks as the latency says."""
        for event, n_tokens in self.events or []:
            if self.pace is not None and n_tokens:
                delay = self.pace(n_tokens)
                if delay > 0:
                    time.sleep(delay)
            yield sse(event)


def _as_policy(policy: Any) -> Policy:
    if policy is None:
        return ToolUser()
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, (list, tuple)):
        return Script(policy)
    if callable(policy):
        return Function(policy)
    raise TypeError(f"policy must be a Policy, a list of scripted turns or a function, "
                    f"not {policy!r}")


def _digest(*parts: Any) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


class SimulatedAPI:
    """An offline OpenAI-compatible model (see the module docstring and API.md).

    Args:
        policy: what the model says: a ``Policy``, a list of scripted turns (a ``Script``), or
            a function ``(messages, tools) -> reply``. Default ``ToolUser()``.
        latency: a ``Latency`` (default None: answer at once).
        faults: a ``Faults``, a ``FaultPlan`` or a plain list of plan entries.
        seed: makes ids and latency jitter reproducible.
        strict: reject invalid requests with the real API's 400s (``check_request``).

    ``requests`` logs every chat-completions request, in arrival order, as a dict::

        {"body": dict | None,       # the request JSON
         "status": int,             # 200, 4xx/5xx, or 0 when no response was sent (timeout)
         "response": dict | None,   # the ChatCompletion (for a stream: what it adds up to)
         "error": dict | None,      # the "error" object sent (or a note for timeouts)
         "stream": bool, "fault": str | None,   # e.g. "rate_limit", "timeout", "http_401"
         "at": float}               # seconds since the simulator was made (or reset)

    Tool-call and completion ids are derived from the seed and the request, so a retried
    request gets the same ids and two runs with the same seed are identical; ``created`` is a
    fixed timestamp. ``stall_s``: how long ``serve()`` holds a ``"timeout"`` request.
    """

    stall_s: float = 30.0

    def __init__(self, policy: Any = None, *, latency: Latency | None = None,
                 faults: Faults | FaultPlan | list | None = None, seed: int = 0,
                 strict: bool = True):
        self.policy = _as_policy(policy)
        self.latency = latency
        self.faults = FaultPlan(faults) if isinstance(faults, (list, tuple)) else faults
        self.seed = seed
        self.strict = strict
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._t0 = time.monotonic()
        self._token_cache: dict[tuple[str, str], int] = {}

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(policy={self.policy!r}, latency={self.latency!r}, "
                f"faults={self.faults!r}, seed={self.seed}, strict={self.strict})")

    # ------------------------------------------------------------ public API

    def client(self, **openai_kwargs: Any):
        """A real ``openai.OpenAI`` client wired to this simulator by an in-process transport.

        Defaults: ``api_key="sk-sim"``, ``base_url="http://sim.local/v1"``, ``max_retries=0``;
        any keyword overrides them (``timeout=``, ``max_retries=``...).
        """
        import httpx2
        import openai
        openai_kwargs.setdefault("api_key", "sk-sim")
        openai_kwargs.setdefault("base_url", "http://sim.local/v1")
        openai_kwargs.setdefault("max_retries", 0)
        openai_kwargs.setdefault("http_client", httpx2.Client(transport=self.transport()))
        return openai.OpenAI(**openai_kwargs)

    def transport(self):
        """The ``httpx2.MockTransport`` that routes requests into this simulator."""
        import httpx2
        return httpx2.MockTransport(self._on_transport_request)

    def serve(self, host: str = "127.0.0.1", port: int = 0):
        """Context manager: run this simulator as a real HTTP server; yields the base URL
        ``http://HOST:PORT/v1`` (usable by any OpenAI client, streaming included)."""
        from .server import serve
        return serve(self, host, port)

    def reset(self) -> None:
        """Clear ``.requests`` and rewind faults and jitter: behave like a fresh simulator."""
        with self._lock:
            self.requests.clear()
            self._rng = random.Random(self.seed)
            self._t0 = time.monotonic()
            if self.faults is not None:
                self.faults.reset()

    # ------------------------------------------------------------ transport

    def _on_transport_request(self, request):
        import httpx2
        timeout = (request.extensions.get("timeout") or {}).get("read")
        reply = self.handle(request.method, request.url.path, request.content,
                            read_timeout=timeout)
        if reply.action == "timeout":
            raise httpx2.ReadTimeout("simulated read timeout (agentlab.sim)", request=request)
        if reply.action == "disconnect":
            raise httpx2.RemoteProtocolError(
                "Server disconnected without sending a complete response (agentlab.sim)",
                request=request)
        if reply.events is not None:
            return httpx2.Response(reply.status, headers=reply.headers,
                                   content=reply.iter_bytes())
        return httpx2.Response(reply.status, headers=reply.headers, content=reply.body)

    # ------------------------------------------------------------ request handling

    def handle(self, method: str, path: str, raw: bytes, *,
               read_timeout: float | None = None) -> SimReply:
        """Answer one HTTP request. ``read_timeout`` (seconds), when given, turns a reply
        slower than it into a timeout, the way a real client's read timeout would."""
        path = path.split("?")[0].rstrip("/")
        if method == "GET" and path in ("/v1/models", "/models"):
            data = [{"id": m, "object": "model", "created": CREATED,
                     "owned_by": "agentlab-sim"} for m in MODELS]
            return self._json(200, {"object": "list", "data": data})
        if not (method == "POST" and path in ("/v1/chat/completions", "/chat/completions")):
            return self._json(404, api_error(f"Invalid URL ({method} {path})"))
        entry: dict = {"body": None, "status": 0, "response": None, "error": None,
                       "stream": False, "fault": None, "at": 0.0}
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        if isinstance(body, dict):
            entry["body"], entry["stream"] = body, bool(body.get("stream"))
        with self._lock:  # the fault drawn for request i is the plan's entry i
            entry["at"] = round(time.monotonic() - self._t0, 6)
            spec = self.faults.next() if self.faults is not None else None
            factor = self.latency.factor(self._rng) if self.latency else 0.0
            self.requests.append(entry)
        if spec is not None:
            entry["fault"] = spec.kind
        try:
            return self._answer(entry, body, spec, factor, read_timeout)
        except _Timeout:
            return SimReply(0, action="timeout")
        except SimulatorHTTPError as exc:
            entry["status"], entry["error"] = exc.status, exc.body["error"]
            return self._json(exc.status, exc.body, exc.headers)

    def _answer(self, entry: dict, body: Any, spec: FaultSpec | None, factor: float,
                read_timeout: float | None) -> SimReply:
        model = str(body.get("model") or DEFAULT_MODEL) if isinstance(body, dict) else DEFAULT_MODEL
        # 1. faults that replace the reply altogether
        if spec is not None and spec.status is not None:
            status, err, headers = fault_response(spec, model)
            raise SimulatorHTTPError(status, err, headers)
        if not isinstance(body, dict):
            raise SimulatorHTTPError(400, api_error(
                "We could not parse the JSON body of your request. (HINT: This likely means you "
                "aren't using your HTTP library correctly. The OpenAI API expects a JSON "
                "payload, but what was sent was not valid JSON.)"))
        no_reply = spec is not None and (spec.kind in ("timeout", "disconnect") or (
            spec.kind == "truncated_stream" and not entry["stream"]))  # no body to cut short
        if no_reply:
            entry["error"] = {"message": f"simulated {spec.kind}: no response was sent",
                              "type": spec.kind, "param": None, "code": None}
            return SimReply(0, action="timeout" if spec.kind == "timeout" else "disconnect")
        # 2. validation, then the policy
        if self.strict:
            check_request(body)
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        tools = body.get("tools") or []
        if body.get("tool_choice") == "none":
            tools = []  # the model is told not to call tools: it does not see them
        try:
            content, calls = normalize_reply(self.policy.respond(messages, tools))
        except Exception as exc:  # a policy bug: answer 500 and show it in .requests
            raise SimulatorHTTPError(500, api_error(
                f"agentlab.sim policy {self.policy!r} raised {type(exc).__name__}: {exc}",
                type="server_error")) from exc
        reply = self._build(body, model, messages, content, calls,
                            malformed=spec is not None and spec.kind == "malformed_arguments")
        entry["status"], entry["response"] = 200, reply
        # 3. latency: first token, then the tokens
        headers = {"x-request-id": "req_" + reply["id"][9:33]}
        first = self.latency.first_token_s(factor) if self.latency else 0.0
        if entry["stream"]:
            return self._stream(entry, reply, body, spec, factor, first, read_timeout, headers)
        wait = first + (self.latency.tokens_s(reply["usage"]["completion_tokens"], factor)
                        if self.latency else 0.0)
        self._sleep(entry, wait, read_timeout)
        return self._json(200, reply, headers)

    def _stream(self, entry, reply, body, spec, factor, first, read_timeout, headers):
        from agentlab.tokens import encoding_for
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        truncated = spec is not None and spec.kind == "truncated_stream"
        events = stream_events(reply, encoding_for(reply["model"]),
                                       include_usage=include_usage, truncated=truncated)
        self._sleep(entry, first, read_timeout)
        pace = None
        if self.latency is not None and factor > 0:
            latency = self.latency
            pace = lambda n: latency.tokens_s(n, factor)  # noqa: E731
        headers = {**headers, "content-type": "text/event-stream; charset=utf-8",
                   "cache-control": "no-cache"}
        return SimReply(200, headers, events=events, pace=pace)

    def _sleep(self, entry: dict, seconds: float, read_timeout: float | None) -> None:
        if read_timeout and seconds > read_timeout:
            time.sleep(read_timeout)  # the client would give up here
            entry["status"], entry["response"] = 0, None
            entry["error"] = {"message": "simulated read timeout: the reply took "
                              f"{seconds:.3f} s > client timeout {read_timeout:.3f} s",
                              "type": "timeout", "param": None, "code": None}
            raise _Timeout()
        if seconds > 0:
            time.sleep(seconds)

    @staticmethod
    def _json(status: int, obj: dict, headers: dict | None = None) -> SimReply:
        raw = json.dumps(obj, ensure_ascii=False).encode()
        return SimReply(status, {"content-type": "application/json", **(headers or {})}, raw)

    # ------------------------------------------------------------ replies

    def _build(self, body: dict, model: str, messages: list, content: str | None,
               calls: list[Call], *, malformed: bool) -> dict:
        """The ChatCompletion for a policy's reply. ``max_tokens``/``max_completion_tokens``
        cut text replies (``finish_reason`` ``length``); tool calls are never cut (except by
        the ``malformed_arguments`` fault). ``completion_tokens`` counts the content plus each
        call's name and arguments."""
        from agentlab.tokens import count_text_tokens, encoding_for
        # ids depend only on the request (seed, history length, last message): a retried
        # request gets the same ids, and two runs with the same seed are identical
        last = json.dumps(messages[-1], sort_keys=True, default=str) if messages else ""
        key = _digest(self.seed, len(messages), last)
        wire_calls = []
        for i, c in enumerate(calls):
            args = json.dumps(c.arguments, ensure_ascii=False)
            if malformed:
                args = args[: max(1, len(args) // 2)]  # cut off: not valid JSON
            wire_calls.append({"id": "call_" + _digest(key, i, c.name)[:24], "type": "function",
                               "function": {"name": c.name, "arguments": args}})
        finish = "tool_calls" if wire_calls else "stop"
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if content and isinstance(limit, int) and limit > 0:
            enc = encoding_for(model)
            toks = enc.encode(content, disallowed_special=())
            if len(toks) > limit:  # the model ran out of tokens mid-answer
                content = enc.decode_bytes(toks[:limit]).decode("utf-8", errors="ignore")
                finish = "length"
        n_completion = (count_text_tokens(content, model) if content else 0) + sum(
            count_text_tokens(c["function"]["name"], model)
            + count_text_tokens(c["function"]["arguments"], model) for c in wire_calls)
        prompt = self._prompt_tokens(messages, model, body.get("tools"))
        usage = {"prompt_tokens": prompt, "completion_tokens": n_completion,
                 "total_tokens": prompt + n_completion}
        return completion(cid="chatcmpl-" + key[:29], model=model, content=content,
                          calls=wire_calls, finish_reason=finish, usage=usage)

    def _prompt_tokens(self, messages: list, model: str, tools: Any) -> int:
        """``tokens.count_messages_tokens`` with a per-message cache (histories repeat)."""
        from agentlab.tokens import (REPLY_PRIMING, count_message_tokens, count_tools_tokens,
                                     encoding_for)
        enc = encoding_for(model).name
        total = REPLY_PRIMING
        cache = self._token_cache
        for m in messages:
            if not isinstance(m, dict):
                continue
            k = (enc, json.dumps(m, sort_keys=True, default=str))
            n = cache.get(k)
            if n is None:
                if len(cache) > 50_000:
                    cache.clear()
                n = cache[k] = count_message_tokens(m, model)
            total += n
        if isinstance(tools, list) and tools:
            total += count_tools_tokens(tools, model)
        return total


class _Timeout(Exception):
    """Internal: the reply took longer than the client's read timeout."""

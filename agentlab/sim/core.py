"""The simulated API: an OpenAI-compatible chat-completions endpoint in-process (notebook 00).

``SimulatedAPI`` answers ``POST /v1/chat/completions`` like the real API: it validates the
request (strict mode), asks its policy what to say, counts ``usage`` with tiktoken, and returns
a ChatCompletion or an SSE stream. Faults and latency are layered on top. The same handler
serves the in-process transport (``.client()``: the real ``openai`` SDK over an
``httpx2.MockTransport``) and the real HTTP server (``.serve()``, see ``server.py``).

``agentlab.sim.Simulator`` is this class plus the chapter-01 shortcut ``.llm()``
(``agentlab/sim/simulator.py``); nothing here imports ``agentlab.llm``.

Order of work per request: route -> parse JSON -> draw the fault (HTTP-error faults answer
here) -> strict validation (shape, types, the model table, the context window) -> policy ->
reply (+ malformed/truncated faults) -> latency. Whatever goes wrong inside, the caller gets an
HTTP answer (a 400 for a bad request, a 500 naming the problem), never an exception.
"""
from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..models import DEFAULT_MODEL, known_models, model_info
from ..tokens import encoding_for
from .build import build_completion, prompt_tokens
from .faults import FaultPlan, Faults, FaultSpec, Latency, fault_response
from .policies import Function, Policy, Script, ToolUser, reply_parts
from .replies import CREATED, sse, stream_events
from .server import serve as _serve
from .strict import (SimulatorHTTPError, api_error, check_model, check_request, check_window,
                     sanitize)

__all__ = ["SimulatedAPI", "SimReply"]

# The models the simulator knows are the one table, ``agentlab.models`` (``data/models.json``
# plus ``register_model``): ``GET /v1/models`` lists them and strict mode answers 404 for any other.


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
        import httpx2  # lazy: heavy
        import openai  # lazy: heavy
        openai_kwargs.setdefault("api_key", "sk-sim")
        openai_kwargs.setdefault("base_url", "http://sim.local/v1")
        openai_kwargs.setdefault("max_retries", 0)
        openai_kwargs.setdefault("http_client", httpx2.Client(transport=self.transport()))
        return openai.OpenAI(**openai_kwargs)

    def transport(self):
        """The ``httpx2.MockTransport`` that routes requests into this simulator."""
        import httpx2  # lazy: heavy
        return httpx2.MockTransport(self._on_transport_request)

    def serve(self, host: str = "127.0.0.1", port: int = 0, **options: Any):
        """Context manager: run this simulator as a real HTTP server; yields the base URL
        ``http://HOST:PORT/v1`` (usable by any OpenAI client, streaming included).

        ``options`` go to ``agentlab.sim.server.serve`` (``access_log``, ``max_body_bytes``,
        ``header_timeout_s``, ``body_timeout_s``, ``backlog``)."""
        return _serve(self, host, port, **options)

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
        import httpx2  # lazy: heavy
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
        slower than it into a timeout, the way a real client's read timeout would.

        Never raises: an unexpected failure is a 500 with an OpenAI-shaped body naming it."""
        try:
            return self._handle(method, path, raw, read_timeout)
        except Exception as exc:  # a simulator bug must still be an HTTP answer
            return self._json(500, api_error(f"agentlab.sim could not answer this request: "
                                             f"{type(exc).__name__}: {exc}", type="server_error"))

    def _handle(self, method: str, path: str, raw: bytes,
                read_timeout: float | None) -> SimReply:
        path = path.split("?")[0].rstrip("/")
        if method == "GET" and path in ("", "/v1"):  # a person's browser or curl, looking
            return self._json(200, {"object": "agentlab.sim", "message": ABOUT})
        if method == "GET" and path in ("/v1/models", "/models"):
            return self._json(200, {"object": "list", "data": [_model(m) for m in known_models()]})
        model = path.rpartition("/models/")[2] if method == "GET" and "/models/" in path else ""
        if model:  # the SDK's client.models.retrieve(id)
            return self._json(200, _model(model)) if model in known_models() else self._json(
                404, api_error(f"The model '{model}' does not exist", code="model_not_found"))
        if not (method == "POST" and path in ("/v1/chat/completions", "/chat/completions")):
            return self._json(404, api_error(f"Invalid URL ({method} {path})"))
        entry: dict = {"body": None, "status": 0, "response": None, "error": None,
                       "stream": False, "fault": None, "at": 0.0}
        try:
            body = json.loads(raw or b"null")
        except (ValueError, RecursionError):  # RecursionError: a 100k-deep JSON document
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
        name = body.get("model") if isinstance(body, dict) else None
        model = name if isinstance(name, str) and name else DEFAULT_MODEL
        # 1. faults that replace the reply altogether
        if spec is not None and spec.status is not None:
            status, err, headers = fault_response(spec, model)
            raise SimulatorHTTPError(status, err, headers)
        if not isinstance(body, dict):
            raise SimulatorHTTPError(400, api_error(
                "We could not parse the JSON body of your request. (HINT: This likely means you "
                "aren't using your HTTP library correctly. The OpenAI API expects a JSON "
                "payload, but what was sent was not valid JSON.)"))
        if spec is not None and spec.kind == "error_in_body":  # 200, then an error object
            error = {"code": 502, "message": spec.message or "Upstream provider returned an error"}
            entry["status"], entry["error"] = 200, error
            if entry["stream"]:
                return SimReply(200, {"content-type": "text/event-stream"},
                                events=[({"error": error}, 0)])
            return self._json(200, {"error": error})
        no_reply = spec is not None and (spec.kind in ("timeout", "disconnect") or (
            spec.kind == "truncated_stream" and not entry["stream"]))  # no body to cut short
        if no_reply:
            entry["error"] = {"message": f"simulated {spec.kind}: no response was sent",
                              "type": spec.kind, "param": None, "code": None}
            return SimReply(0, action="timeout" if spec.kind == "timeout" else "disconnect")
        # 2. validation (strict: what the real API rejects; lenient: drop what is unusable)
        if self.strict:
            check_request(body)
            info = check_model(model)
            messages, tools = body["messages"], body.get("tools") or []
        else:
            info = model_info(model)
            messages, tools = sanitize(body)
        prompt, tools_n = prompt_tokens(messages, model, tools, self._token_cache)
        if self.strict:
            check_window(info, body, prompt, tools_n)
        # 3. the policy (a tool_choice of "none" hides the tools from it)
        offered = [] if body.get("tool_choice") == "none" else tools
        try:
            parts = reply_parts(self.policy.respond(messages, offered))
        except Exception as exc:  # a policy bug: answer 500 and show it in .requests
            raise SimulatorHTTPError(500, api_error(
                f"agentlab.sim policy {self.policy!r} raised {type(exc).__name__}: {exc}",
                type="server_error")) from exc
        reply = build_completion(body, model, messages, parts, seed=self.seed, prompt=prompt,
                                 malformed=spec is not None and spec.kind == "malformed_arguments")
        entry["status"], entry["response"] = 200, reply
        # 4. latency: first token, then the tokens
        headers = {"x-request-id": "req_" + reply["id"][9:33]}
        first = self.latency.first_token_s(factor) if self.latency else 0.0
        if entry["stream"]:
            return self._stream(entry, reply, body, spec, factor, first, read_timeout, headers)
        wait = first + (self.latency.tokens_s(reply["usage"]["completion_tokens"], factor)
                        if self.latency else 0.0)
        self._sleep(entry, wait, read_timeout)
        return self._json(200, reply, headers)

    def _stream(self, entry, reply, body, spec, factor, first, read_timeout, headers):
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
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

ABOUT = ("agentlab's simulated OpenAI-compatible endpoint: point an OpenAI client at this "
         "server's /v1 (base_url) with any API key; POST /v1/chat/completions, GET /v1/models")


def _model(name: str) -> dict:
    return {"id": name, "object": "model", "created": CREATED, "owned_by": "agentlab-sim"}


class _Timeout(Exception):
    """Internal: the reply took longer than the client's read timeout."""


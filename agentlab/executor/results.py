"""What a tool call produced, as the model will read it (chapter 03, ``notebooks/03_tool_executor``).

``ToolResult`` is one call's outcome; ``to_text`` turns a return value into the text of its
``tool`` message; ``render_result`` does so inside that call's own error boundary: a value that
cannot become text (``10**5000``, an object whose ``__str__`` raises, a structure nested 100,000
deep) fails *that* call with ``tool_result_unrenderable`` -- saying that the tool did run -- and
never the batch around it.

What reaches the model is always valid UTF-8: lone UTF-16 surrogates (``os.fsdecode`` of a
file name that is not UTF-8, half of a split emoji) are replaced with U+FFFD and the text says
how many were; ``bytes`` that are UTF-8 are that text, other bytes (a PNG, latin-1 text) become
``[binary result: image/png, 2,048 bytes, sha256 ...]`` -- never U+FFFD garbage read as a result.

The error codes of a failed result, and what its text tells the model:

    tool_not_found            the name is not registered (the text lists the available tools)
    invalid_arguments         arguments are not a JSON object or fail ``ToolRegistry.validate``
    tool_failed               the function raised (type and message shown); an ``AgentError``
                              raised by a tool keeps its own code
    tool_timeout              the call missed its deadline (async: cancelled; sync: abandoned)
    cancelled                 the run was cancelled while the call ran (cancelled or abandoned)
    tool_result_unrenderable  the call ran, but its result has no text form
    deadline_exceeded         the batch ``timeout`` ran out before the call could start
    not_executed              the call was not started (a cancel, a stop, a lost lease): ``not_run``
    approval_required         the tool needs a human's approval and the batch carries none
    executor_saturated        too many abandoned calls are still running
    executor_error            an internal failure; the text says whether the call had started
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Callable, Iterable

__all__ = ["ToolResult", "to_text", "safe_str", "render_result", "failed_result", "OnResult",
           "not_run", "valid_text", "bytes_text"]

#: Leading bytes of the binary formats a tool most often returns, and their media types.
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
          (b"GIF8", "image/gif"), (b"%PDF-", "application/pdf"),
          (b"PK\x03\x04", "application/zip"), (b"\x1f\x8b", "application/gzip"))


@dataclass
class ToolResult:
    """The outcome of one tool call, ready to go back to the model as a ``tool`` message.

    ``started_at`` is the ``time.perf_counter()`` at which the call started (0.0 if it never
    ran); the Gantt charts of ``notebooks/03_tool_executor`` are drawn from it. ``timeout_s`` is
    the limit actually enforced for the call (its own timeout, or less when the batch bound
    was nearer), None when it never started.
    """

    tool_call_id: str
    name: str
    result: str
    success: bool
    duration_ms: float = 0.0
    error_code: str | None = None
    started_at: float = field(default=0.0, compare=False, repr=False)
    timeout_s: float | None = field(default=None, compare=False)


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "model_dump") and callable(obj.model_dump):  # a pydantic model
        return obj.model_dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, (_dt.date, _dt.time)):
        return obj.isoformat()
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes_text(obj)
    if isinstance(obj, PurePath):
        return str(obj)
    return str(obj)


def safe_str(obj: Any) -> str:
    """``str(obj)``, or a description of it when its ``__str__`` itself raises."""
    try:
        return str(obj)
    except Exception as exc:  # noqa: BLE001 - any failure of user code is described instead
        return f"<{type(obj).__name__} whose str() raised {type(exc).__name__}>"


def bytes_text(data: bytes | bytearray | memoryview) -> str:
    """Bytes as text for the model: the text when they are UTF-8, else a marker with the media
    type (sniffed from the first bytes), the size and the sha256 digest."""
    data = bytes(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    kind = next((t for magic, t in _MAGIC if data.startswith(magic)), "application/octet-stream")
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        kind = "image/webp"
    return (f"[binary result: {kind}, {len(data)} bytes, sha256 "
            f"{hashlib.sha256(data).hexdigest()}; not UTF-8 text, so not shown]")


def _repair(text: str) -> tuple[str, int]:
    """``text`` with surrogate pairs joined and lone surrogates replaced; how many were lone."""
    if text.isascii():
        return text, 0
    try:
        text.encode("utf-8")  # C speed; a regex scan of 100k characters takes ~1 ms
        return text, 0
    except UnicodeEncodeError:
        pass
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return fixed, fixed.count("\ufffd") - text.count("\ufffd")


def _note(lone: int) -> str:
    return (f"\n[note: {lone} character(s) that are not valid Unicode (lone surrogates, e.g. "
            "from a file name that is not UTF-8) were replaced with U+FFFD]" if lone else "")


def valid_text(text: str) -> str:
    """``text`` made encodable as UTF-8: surrogate pairs joined, lone surrogates replaced with
    U+FFFD and a note saying how many were (the API would refuse the request otherwise)."""
    fixed, lone = _repair(text)
    return fixed + _note(lone)


def to_text(value: Any, max_chars: int | None = None) -> str:
    """A tool's return value as the text the model reads.

    Strings pass through (made valid UTF-8, ``valid_text``); bytes are text or a marker
    (``bytes_text``); anything else becomes JSON (non-ASCII kept, pydantic models and
    dataclasses as objects, Enums as their values, sets/tuples as arrays, dates in ISO form).
    Text longer than ``max_chars`` is cut, with a marker saying how much was cut. May raise
    for a value that has no text at all; ``render_result`` catches that per call.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes_text(value)
    elif not isinstance(value, str):
        try:
            value = json.dumps(value, ensure_ascii=False, default=_json_default)
        except (TypeError, ValueError):  # e.g. a circular structure
            value = str(value)
    value, lone = _repair(value)
    if max_chars is not None and len(value) > max_chars:
        cut = len(value) - max_chars
        value = (value[:max_chars] + f"\n...[truncated: {cut} of {len(value)} characters cut; "
                 "ask for less, e.g. a narrower query or a page range]")
    return value + _note(lone)  # after the cut, so the note is never cut off


def failed_result(call_id: str, name: str, code: str, text: str, ms: float,
                  started: float = 0.0, timeout_s: float | None = None,
                  max_chars: int | None = None) -> ToolResult:
    """A failed ``ToolResult`` whose text starts with ``Error:``."""
    return ToolResult(call_id, name, to_text(f"Error: {text}", max_chars), False, ms, code,
                      started, timeout_s)


def render_result(call_id: str, name: str, value: Any, ms: float, started: float,
                  timeout_s: float | None, max_chars: int | None) -> ToolResult:
    """A successful call's result as text, inside its own error boundary."""
    try:
        text = to_text(value, max_chars)
    except Exception as exc:  # noqa: BLE001 - RecursionError, ValueError, a raising __str__...
        return failed_result(
            call_id, name, "tool_result_unrenderable",
            f"Tool '{name}' ran and finished, but its result (a {type(value).__name__}) cannot "
            f"be turned into text ({type(exc).__name__}: {safe_str(exc)[:200]}). Its effects "
            "happened: do not call it again just to see the result; ask for a smaller or "
            "simpler result instead.", ms, started, timeout_s, max_chars)
    return ToolResult(call_id, name, text, True, ms, None, started, timeout_s)


#: ``on_result(result)``: told of each result as soon as it is known (``ToolBatch.report``).
OnResult = Callable[[ToolResult], Any]


def not_run(calls: Iterable[Any], code: str, why: str) -> list[ToolResult]:
    """A failed result for each call that has no result of its own: the one text for "this
    call did not run" (a cancel, a stop before the tools, a lost lease, an abandoned batch).

    ``code`` is the ``error_code`` (``not_executed``, ``cancelled``, ...); ``why`` says what
    happened and, when the call may have started, what the model should check.
    """
    return [failed_result(safe_str(getattr(c, "id", "")), safe_str(getattr(c, "name", "")), code,
                          f"'{safe_str(getattr(c, 'name', ''))}' has no result: {why}.", 0.0)
            for c in calls]

"""The sandbox worker: a warm process that runs one tool call at a time (chapter 15).

Started by ``pool.py`` as ``python -m agentlab.sandbox.worker FD_IN FD_OUT CONFIG``. It
confines itself (``limits.confine``), says it is ready, then loops: read a request (a pickled
``(function, kwargs, cpu_s)`` from the trusted parent), run it in a fresh private folder with
stdout and stderr sent to files there (capped by ``RLIMIT_FSIZE``), answer in JSON, delete
the folder. The answer is JSON *only*: nothing the tool returns can run code in the parent,
and a value that is not JSON is reported as ``result_not_json``.

Frames on both pipes are a 4-byte big-endian length and that many bytes.
"""
from __future__ import annotations

import errno
import json
import marshal
import os
import pickle
import shutil
import struct
import sys
import tempfile
import time
import types
from typing import Any

__all__ = ["read_frame", "write_frame", "function_spec", "main"]

_HEADER = struct.Struct(">I")


def write_frame(fd: int, data: bytes) -> None:
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def read_frame(fd: int, limit: int | None = None) -> bytes | None:
    """One frame, or None at end of file; ``OverflowError`` when it announces more than
    ``limit`` bytes (the reader does not read it)."""
    head = _read_exactly(fd, _HEADER.size)
    if head is None:
        return None
    size = _HEADER.unpack(head)[0]
    if limit is not None and size > limit:
        raise OverflowError(size)
    return _read_exactly(fd, size)


def _read_exactly(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def function_spec(func: Any) -> tuple:
    """How the worker finds ``func``: by reference (module and name) when it can import it,
    else its compiled code (a function defined in a notebook must then do its own imports)."""
    module = getattr(func, "__module__", None)
    if module not in (None, "__main__") and "<locals>" not in func.__qualname__:
        return ("ref", module, func.__qualname__)
    return ("code", marshal.dumps(func.__code__), func.__name__, func.__defaults__,
            func.__kwdefaults__)


def _resolve(spec: tuple) -> Any:
    if spec[0] == "ref":
        import importlib
        obj: Any = importlib.import_module(spec[1])
        for part in spec[2].split("."):
            obj = getattr(obj, part)
        return getattr(obj, "sandboxed_function", obj)  # a SandboxedTool: its own function
    code = marshal.loads(spec[1])
    func = types.FunctionType(code, {"__builtins__": __builtins__, "__name__": "__sandbox__"},
                              spec[2], spec[3])
    func.__kwdefaults__ = spec[4]
    return func


def _limit_cpu(cpu_s: float) -> None:
    """This call may use ``cpu_s`` more CPU seconds (RLIMIT_CPU counts the process's life)."""
    import resource
    used = resource.getrusage(resource.RUSAGE_SELF)
    now = int(used.ru_utime + used.ru_stime) + 1
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    soft = now + int(cpu_s)
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard < 0 else min(soft, hard), hard))


def _failure(exc: BaseException) -> dict:
    limit = None
    if isinstance(exc, MemoryError):
        limit = "memory"
    elif isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        limit = "file_size"
    elif isinstance(exc, OSError) and exc.errno == errno.EAGAIN and "fork" in repr(exc.args) \
            or isinstance(exc, BlockingIOError):
        limit = "processes"
    return {"ok": False, "type": type(exc).__name__, "message": str(exc)[:2000], "limit": limit}


def _run(spec: tuple, kwargs: dict, cpu_s: float) -> dict:
    folder = tempfile.mkdtemp(prefix="call-", dir=os.environ["HOME"])
    saved = os.dup(1), os.dup(2)
    try:
        os.chdir(folder)
        for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, fd)
            os.close(out)
        _limit_cpu(cpu_s)
        t0 = time.perf_counter()
        try:
            value = _resolve(spec)(**kwargs)
            sys.stdout.flush()
        except BaseException as exc:  # noqa: BLE001 - every failure goes back as data
            return _failure(exc)
        return {"ok": True, "value": value, "ms": (time.perf_counter() - t0) * 1000}
    finally:
        try:
            sys.stdout.flush()
        except OSError:
            pass
        for fd, keep in zip((1, 2), saved):
            os.dup2(keep, fd)
            os.close(keep)
        os.chdir(os.environ["HOME"])
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str]) -> int:
    from .limits import confine
    fd_in, fd_out, config = int(argv[0]), int(argv[1]), json.loads(argv[2])
    home = tempfile.mkdtemp(prefix="agentlab-sandbox-")
    os.environ["HOME"] = os.environ["TMPDIR"] = home
    os.chdir(home)
    write_frame(fd_out, json.dumps({"ready": confine(config), "pid": os.getpid()}).encode())
    try:
        while True:
            request = read_frame(fd_in)
            if request is None:
                return 0
            spec, kwargs, cpu_s = pickle.loads(request)  # from the trusted parent only
            answer = _run(spec, kwargs, cpu_s)
            try:
                text = json.dumps(answer, allow_nan=False)
            except (TypeError, ValueError, RecursionError, MemoryError) as exc:
                text = json.dumps({"ok": False, "type": "result_not_json", "limit": None,
                                   "message": f"{type(answer.get('value')).__name__} cannot "
                                   f"cross as JSON ({type(exc).__name__}: {exc})"[:2000]})
            del answer
            write_frame(fd_out, text.encode())
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Checks for exercise 05, safe keys and atomic writes (``notebooks/exercises/05_safe_keys.ipynb``).

Part A, ``is_safe_key(key) -> bool``: True only for keys that are safe as a file name inside a
store directory (``f"{key}.json"``): a non-empty string of at most 200 characters, with no
``/``, ``\\`` or ``:``, no control characters, not starting with ``.`` (which covers ``.`` and
``..``).

Part B, ``atomic_write_text(path, text)``: replace the file's content so that a crash at any
moment leaves either the old content or the new one: write a temporary file in the same
directory, flush and ``os.fsync`` it, then ``os.replace`` it over ``path``; remove the
temporary file if anything fails, and re-raise.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from .cases import Case, run_cases

__all__ = ["check_safe_key", "check_atomic_write", "SAFE_KEYS", "UNSAFE_KEYS"]

SAFE_KEYS = ["notes", "run_42.summary", "task-1", "研究笔记", "a" * 200]
UNSAFE_KEYS = {
    "empty": "",
    "parent directory": "..",
    "escape with ../": "../outside",
    "a sub-directory": "a/b",
    "a Windows separator": "a\\b",
    "an absolute path": "/etc/passwd",
    "a drive letter": "C:evil",
    "a NUL byte": "nul\x00byte",
    "a newline": "two\nlines",
    "a hidden file": ".hidden",
    "too long (201 characters)": "a" * 201,
}


def check_safe_key(fn: Callable[[str], bool]) -> str:
    """Check ``fn(key) -> bool``: True for every safe key, False for every unsafe one."""
    cases = [Case("safe keys are accepted", lambda: {k[:20]: fn(k) for k in SAFE_KEYS},
                  {k[:20]: True for k in SAFE_KEYS},
                  hint="inner dots, dashes, underscores and non-ASCII letters are all fine.")]
    hints = {"empty": "an empty key would name the file '.json'.",
             "parent directory": "'..' is the parent directory: refuse keys starting with '.'.",
             "escape with ../": "any '/' lets the key leave the directory.",
             "a sub-directory": "'/' makes a path, not a name: refuse it.",
             "a Windows separator": "on Windows '\\' is a separator too.",
             "an absolute path": "Path('store') / '/etc/passwd' is '/etc/passwd'!",
             "a drive letter": "'C:evil' is relative to drive C's current directory on Windows.",
             "a NUL byte": "reject characters below 32 (and 127).",
             "a newline": "reject characters below 32 (and 127).",
             "a hidden file": "dot-files are where the store keeps its temporary files.",
             "too long (201 characters)": "file names are limited (255 bytes on most systems)."}
    for name, key in UNSAFE_KEYS.items():
        cases.append(Case(f"refuses {name}", lambda key=key: fn(key), False, hint=hints[name]))
    return run_cases("safe keys", cases)


def check_atomic_write(fn: Callable[[Path, str], None]) -> str:
    """Check ``fn(path, text)``: content replaced, old content kept on failure, no temp left."""
    def in_tmp(body):
        with tempfile.TemporaryDirectory() as d:
            return body(Path(d))

    def new_file(d):
        fn(d / "state.json", '{"v": 1}')
        return (d / "state.json").read_text()

    def overwrite(d):
        (d / "state.json").write_text("old")
        fn(d / "state.json", "new")
        return (d / "state.json").read_text(), sorted(p.name for p in d.iterdir())

    def failing_replace(d):
        (d / "state.json").write_text("old")
        real = os.replace

        def crash(src, dst):
            raise OSError("simulated crash before the rename")
        os.replace = crash
        try:
            fn(d / "state.json", "new")
            raised = "no exception"
        except OSError:
            raised = "OSError"
        finally:
            os.replace = real
        return raised, (d / "state.json").read_text(), sorted(p.name for p in d.iterdir())

    def order(d):
        events, real_fsync, real_replace = [], os.fsync, os.replace
        os.fsync = lambda fd: (events.append("fsync"), real_fsync(fd))[1]
        os.replace = lambda s, t: (events.append("replace"), real_replace(s, t))[1]
        try:
            fn(d / "state.json", "x")
        finally:
            os.fsync, os.replace = real_fsync, real_replace
        return "fsync" in events and "replace" in events and \
            events.index("fsync") < events.index("replace")

    def unicode(d):
        fn(d / "s.json", "异步 café ☕")
        return (d / "s.json").read_bytes().decode("utf-8")

    return run_cases("atomic write", [
        Case("writes a new file", lambda: in_tmp(new_file), '{"v": 1}'),
        Case("replaces old content and leaves no temporary file", lambda: in_tmp(overwrite),
             ("new", ["state.json"]), hint="write to a temporary file in the same directory, "
                                           "then os.replace(tmp, path)."),
        Case("a failure before the rename keeps the old content, re-raises, removes the temp file",
             lambda: in_tmp(failing_replace), ("OSError", "old", ["state.json"]),
             hint="never open the target itself for writing; use os.replace (checked here), "
                  "and in `except` remove the temporary file, then `raise`."),
        Case("the data is fsynced before the rename", lambda: in_tmp(order), True,
             hint="f.flush(); os.fsync(f.fileno()) before os.replace, or a power cut can "
                  "leave an empty file under the new name."),
        Case("non-ASCII text is written as UTF-8", lambda: in_tmp(unicode), "异步 café ☕",
             hint="encode explicitly: open(tmp, 'w', encoding='utf-8') or text.encode('utf-8')."),
    ])

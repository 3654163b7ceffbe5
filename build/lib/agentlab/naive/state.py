"""Naive state store in the article's style (for notebook 05 only).

Kept on purpose:

- the key goes straight into the file name (``f"{key}.json"``), so ``"../x"`` writes outside
  the store directory;
- ``write_text`` truncates the file, then writes: a crash in between leaves a half-written (or
  empty) file and the old value is gone;
- ``default=str`` silently turns any object into its ``str()``;
- an in-memory cache returns the same object it stored (mutating a loaded value changes the
  "stored" one) and goes stale when another process writes;
- the directory is created when the store is constructed.

Do not use this in real code; use ``agentlab.state``.
"""
from __future__ import annotations

import json
from pathlib import Path

__all__ = ["NaiveStateStore"]


class NaiveStateStore:
    def __init__(self, store_dir=".agent_state"):
        self.dir = Path(store_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._cache = {}

    def save(self, key, value):
        self._cache[key] = value
        path = self.dir / f"{key}.json"
        path.write_text(json.dumps(value, ensure_ascii=False, indent=2, default=str))

    def load(self, key, default=None):
        if key in self._cache:
            return self._cache[key]
        path = self.dir / f"{key}.json"
        if path.exists():
            value = json.loads(path.read_text())
            self._cache[key] = value
            return value
        return default

    def clear(self, key=None):
        if key:
            self._cache.pop(key, None)
            (self.dir / f"{key}.json").unlink(missing_ok=True)
        else:
            self._cache.clear()
            for f in self.dir.glob("*.json"):
                f.unlink()

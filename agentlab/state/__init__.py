"""Key-value state that survives a crash: JSON files, SQLite, or memory (notebook 05).

Three stores with one interface — ``save(key, value)``, ``load(key, default=None)``,
``clear(key=None)``, ``keys()``, ``key in store``:

- ``StateStore(store_dir)``: one JSON file per key, written with ``atomic_write`` (defined in
  ``agentlab.atomic``, re-exported here): a temporary file in the same directory, flushed and
  fsynced, then ``os.replace``-d over the old file (atomic on POSIX and Windows), and the
  directory fsynced. A crash at any point leaves either the old value or the new one, never
  half of each. The directory is created by the first write. Chapter 11's checkpoint files are
  written by the same function.
- ``SQLiteStateStore(path)``: stdlib ``sqlite3`` in WAL mode, one transaction per write,
  thread-safe (one connection behind a lock). The file is created by the first write.
- ``MemoryStateStore()``: a dict, for tests and notebooks; same checks, same copies.

What every store refuses, with a ``StateError`` (the same rules on every store, so a key that
works in memory works in a folder on Windows too):

- keys that could escape the store or are not portable file names (``invalid_key``), the
  rules of ``agentlab.atomic.portable_name_problem``: empty; more than 200 bytes of UTF-8;
  a lone surrogate; a control character or one of ``/ \\ : * ? " < > |``; a leading ``.``;
  a trailing space or dot; a Windows device name (``CON``, ``PRN``, ``AUX``, ``NUL``,
  ``CONIN$``, ``CONOUT$``, ``COM0``-``COM9``, ``LPT0``-``LPT9``, with any extension);
- values that are not plain JSON (``not_serializable``): the error names the key, the path
  inside the value and its type. Nothing is silently turned into ``str()``. Tuples are stored
  as lists (JSON has no tuples). Also refused: values nested deeper than Python can walk, ints
  of more than 4,300 digits, text with lone surrogates (not encodable as UTF-8);
- a write the database refuses (``state_write_failed``), including ``database is locked``
  after the busy timeout: several processes creating one new SQLite store at once are
  retried, not failed.

Secrets never reach the store (``agentlab.redaction``): before a value is written, values
under credential-named keys, key-shaped tokens and registered secrets are masked. Set
``store.redacts = False`` for a store that must keep values verbatim.

A stored value that cannot be parsed any more raises ``StateError(code="state_corrupt")``
naming the file; a write the file system refuses raises ``StateError(code="state_write_failed")``
and leaves the old value. ``load`` always returns a fresh copy: mutating it never changes the
store.

Chapter 05 in six files, read in this order:

- ``base.py``: ``BaseStateStore``, the interface, written once over five backend hooks;
- ``validation.py``: what every store refuses (``validate_key``, ``to_json``);
- ``files.py``: ``StateStore``, one JSON file per key; ``sqlite.py``: ``SQLiteStateStore``;
  ``memory.py``: ``MemoryStateStore``.
"""
from ..atomic import atomic_write, fsync_dir
from .base import BaseStateStore
from .files import StateStore
from .memory import MemoryStateStore
from .sqlite import SQLiteStateStore
from .validation import MAX_KEY_LENGTH, to_json, validate_key

__all__ = ["StateStore", "SQLiteStateStore", "MemoryStateStore", "BaseStateStore",
           "validate_key", "to_json", "atomic_write", "fsync_dir", "MAX_KEY_LENGTH"]

"""One redaction layer: what must never reach a disk, an export or a log (chapters 05, 11, 12).

Everything agentlab writes goes through here: state-store values (``agentlab.state``), the
runtime's ``last_run`` record, checkpoints and the durable tool-result log
(``agentlab.checkpoints``), observer exports (``agentlab.observe``) and, with
``RedactingFilter``, log records; the fleet's run records (``agentlab.fleet.runs``) and the
errors ``LLMClient`` raises, whose text a provider may have filled with the key. Four rules,
applied to a copy (the input is never changed):

1. **Credential-named keys**: in a dict, a value under a key that names a credential
   (``api_key``, ``apiKey``, ``authorization``, ``client_secret``, ``password``,
   ``access_token``/``token``, ``credentials``, ``cookie``; not ``total_tokens`` or
   ``max_tokens``) becomes ``"[REDACTED]"`` (``None`` stays ``None``).
2. **Well-known key shapes** inside any string (``KEY_SHAPES``): OpenAI ``sk-...`` and
   ``sk-proj-...``, Anthropic ``sk-ant-...``, Groq ``gsk_...``, Google ``AIza...``, xAI
   ``xai-...``, Hugging Face ``hf_...``, GitHub ``ghp_``/``github_pat_...``, GitLab
   ``glpat-...``, Stripe ``sk_live_...``, AWS ``AKIA...``, Slack ``xox?-...``, and
   ``Bearer <token>``, inner separators included (``gsk_live_4f9a...``, ``sk-proj-ab_cd-...``).
   The recognisable prefix is kept (``gsk_[REDACTED]``) so a reader still sees which kind of
   key was there.
3. **Registered secrets** (``register_secret`` for the whole process, or ``secrets=`` per
   call): exact strings such as the API key a client was built with (``LLMClient`` registers
   its key however it was given: ``api_key=``, ``OPENAI_API_KEY``, or the ``openai`` client
   handed over), masked wherever they appear, messages included.
4. **Tool-call arguments as text**: the ``arguments`` string of an assistant message's tool
   call (JSON the model wrote) gets rule 1 inside it, so ``{"password": "..."}`` is saved as
   ``{"password": "[REDACTED]"}`` in checkpoints and held turns too (re-encoded only when
   something was masked). What that means for resuming a held call: ``agentlab.checkpoints.
   credentials``.

Whole-token matching, so ordinary text is never mangled: a shape or a registered secret
matches only where it is not glued to a letter or digit on either side (``"ask-simon"`` keeps
its ``sk-sim``). The rule for registered secrets, by length:

- shorter than ``MIN_SECRET_LENGTH`` (8): ignored. A token that short (the simulator's
  ``"sk-sim"``) cannot be told from an ordinary word; masking it would damage text without
  protecting anything real;
- 8 to 19 characters: masked as a whole token only;
- ``ANYWHERE_LENGTH`` (20) or more: masked wherever it appears, even glued to other text
  (no ordinary text contains a 20-character key by accident).
"""
from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any, Iterable

__all__ = ["REDACTED", "MIN_SECRET_LENGTH", "ANYWHERE_LENGTH", "KEY_SHAPES", "redact",
           "redact_text", "is_secret_key", "register_secret", "registered_secrets",
           "forget_secrets", "client_api_key", "RedactingFilter"]

REDACTED = "[REDACTED]"
#: Registered secrets shorter than this are ignored (see the module docstring).
MIN_SECRET_LENGTH = 8
#: Registered secrets at least this long are masked even inside a longer token.
ANYWHERE_LENGTH = 20

#: ``(prefix kept, regular expression of the secret part)`` of well-known API key formats.
KEY_SHAPES: tuple[tuple[str, str], ...] = (
    ("sk-proj-", r"[A-Za-z0-9_\-]{16,}"), ("sk-ant-", r"[A-Za-z0-9_\-]{16,}"),
    ("sk-", r"[A-Za-z0-9_\-]{16,}"), ("sk_live_", r"[A-Za-z0-9_\-]{16,}"),
    ("sk_test_", r"[A-Za-z0-9_\-]{16,}"), ("rk_live_", r"[A-Za-z0-9_\-]{16,}"),
    ("gsk_", r"[A-Za-z0-9_\-]{20,}"), ("AIza", r"[0-9A-Za-z_\-]{30,}"),
    ("xai-", r"[A-Za-z0-9_\-]{20,}"), ("hf_", r"[A-Za-z0-9_\-]{30,}"),
    ("github_pat_", r"[A-Za-z0-9_]{22,}"), ("ghp_", r"[A-Za-z0-9_]{30,}"),
    ("gho_", r"[A-Za-z0-9_]{30,}"), ("ghs_", r"[A-Za-z0-9_]{30,}"),
    ("glpat-", r"[A-Za-z0-9_\-]{20,}"), ("AKIA", r"[0-9A-Z]{16}"),
    ("xoxb-", r"[A-Za-z0-9\-]{20,}"), ("xoxp-", r"[A-Za-z0-9\-]{20,}"),
    ("Bearer ", r"[A-Za-z0-9._~+/=\-]{8,}"),
)
_BEFORE, _AFTER = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"  # whole tokens only
_SHAPES_RE = "|".join("(?P<p%d>%s%s)%s" % (i, re.escape(p.strip()), r"\s+" * p.endswith(" "), body)
                      for i, (p, body) in enumerate(KEY_SHAPES))

_SECRET_WORDS = {"secret", "password", "passwd", "credential", "credentials", "authorization",
                 "apikey", "cookie"}

_lock = threading.Lock()
_registered: list[str] = []
_compiled: dict[tuple[str, ...], "_Masker"] = {}
#: Literal text every key shape starts with: a string holding none of them (nor a registered
#: secret) is returned as it is, without running the regular expression over it.
_PREFIXES = {p.strip() for p, _ in KEY_SHAPES}
_TRIGGERS = tuple(sorted(p for p in _PREFIXES if not any(q != p and q in p for q in _PREFIXES)))


class _Masker:
    """A compiled pattern with the literals that must be present for it to match."""

    def __init__(self, pattern: re.Pattern, triggers: tuple[str, ...]) -> None:
        self.pattern = pattern
        self.trigger = re.compile("|".join(map(re.escape, triggers))).search

    def __call__(self, text: str) -> str:
        if self.trigger(text) is None:  # the common case: one scan, in C
            return text
        return self.pattern.sub(_replace, text)


def is_secret_key(key: Any) -> bool:
    """True for a key that names a credential (``apiKey``, ``client_secret``, ``access_token``)."""
    name = key if isinstance(key, str) else str(key)
    found = _SECRET_NAMES.get(name)
    if found is None:
        found = _is_secret_name(name)
        if len(_SECRET_NAMES) < 4096:  # the same few keys come back in every record
            _SECRET_NAMES[name] = found
    return found


_SECRET_NAMES: dict[str, bool] = {}


def _is_secret_name(key: str) -> bool:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(key)).lower()
    words = [w for w in re.split(r"[^a-z0-9]+", words) if w]
    if not words:
        return False
    pairs = set(zip(words, words[1:]))
    return (bool(_SECRET_WORDS.intersection(words)) or words[-1] in ("token", "auth")
            or bool(pairs & {("api", "key"), ("private", "key"), ("access", "key")}))


def register_secret(value: Any) -> bool:
    """Mask this exact string everywhere, in this process, from now on.

    Returns False (and registers nothing) for an empty value, a non-string, or one shorter
    than ``MIN_SECRET_LENGTH``."""
    if not isinstance(value, str) or len(value) < MIN_SECRET_LENGTH:
        return False
    with _lock:
        if value not in _registered:
            _registered.append(value)
    return True


def registered_secrets() -> tuple[str, ...]:
    """The secrets registered in this process (for tests and diagnosis)."""
    with _lock:
        return tuple(_registered)


def forget_secrets() -> None:
    """Unregister every secret (tests; a process that rotated its keys)."""
    with _lock:
        _registered.clear()


def client_api_key(obj: Any) -> str | None:
    """The API key an ``LLMClient`` (or an ``openai`` client) was built with, if it has one."""
    for candidate in (obj, getattr(obj, "client", None)):
        key = getattr(candidate, "api_key", None)
        if isinstance(key, str) and key:
            return key
    return None


def _pattern(extra: Iterable[str]) -> _Masker:
    """One compiled pattern: long secrets anywhere, then whole tokens (secrets, key shapes)."""
    with _lock:
        found = [s for s in (*_registered, *extra)
                 if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH]
    names = tuple(sorted(set(found), key=lambda s: (-len(s), s)))  # longest first
    pattern = _compiled.get(names)
    if pattern is None:
        anywhere = "|".join(re.escape(s) for s in names if len(s) >= ANYWHERE_LENGTH)
        exact = "|".join(re.escape(s) for s in names if len(s) < ANYWHERE_LENGTH)
        tokens = (f"(?P<exact>{exact})|" if exact else "") + _SHAPES_RE
        pattern = _Masker(re.compile((f"(?P<anywhere>{anywhere})|" if anywhere else "")
                                     + f"{_BEFORE}(?:{tokens}){_AFTER}"), names + _TRIGGERS)
        if len(_compiled) > 64:  # per-call secrets vary; keep the cache small
            _compiled.clear()
        _compiled[names] = pattern
    return pattern


def _replace(match: re.Match) -> str:
    name = match.lastgroup  # "anywhere", "exact", or the kept prefix of a key shape
    return REDACTED if name in ("anywhere", "exact") else match.group(name) + REDACTED


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with registered secrets, ``secrets`` and key-shaped tokens masked."""
    if not isinstance(text, str) or not text:
        return text
    return _pattern(secrets)(text)


def redact(obj: Any, secrets: Iterable[str] = (), *, keys: bool = True) -> Any:
    """A copy of ``obj`` with every secret masked (see the module docstring).

    Dicts, lists and tuples (returned as lists) are walked; strings are masked with
    ``redact_text``; with ``keys=True`` a value under a credential-named key becomes
    ``"[REDACTED]"``. Other values are returned as they are. Raises ``RecursionError`` for a
    value nested deeper than Python's recursion limit (the stores turn it into their error).
    """
    pattern = _pattern(secrets)
    return _walk(obj, pattern, keys)


_SCALARS = (int, float, bool, type(None))


def _walk(obj: Any, mask: _Masker, keys: bool) -> Any:
    kind = type(obj)  # exact types first: this walk runs over whole exports
    if kind is str:
        return mask(obj) if obj else obj
    if kind in _SCALARS:
        return obj
    if kind is dict or isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if keys and v is not None and (_SECRET_NAMES.get(k) if k in _SECRET_NAMES
                                           else is_secret_key(k)):
                out[k] = REDACTED
            elif k == "arguments" and type(v) is str:  # a tool call's JSON text: rule 4
                out[k] = _arguments(v, mask)
            else:
                out[k] = v if type(v) in _SCALARS else _walk(v, mask, keys)
        return out
    if kind is list or kind is tuple or isinstance(obj, (list, tuple)):
        return [v if type(v) in _SCALARS else _walk(v, mask, keys) for v in obj]
    if isinstance(obj, str):
        return mask(obj) if obj else obj
    return obj


#: Words one of which a credential-named key holds: JSON text without any is not parsed.
_HINT = re.compile(r"secret|passw|credential|authori[sz]|api.?key|cookie|token|auth|"
                   r"private.?key|access.?key", re.IGNORECASE).search


def _arguments(text: str, mask: _Masker) -> str:
    """A tool call's ``arguments`` text with the key rule applied inside (rule 4): the text as
    it was (shapes and secrets masked) when no credential-named value is in it, else the
    masked object as JSON. Text that is not a JSON object gets the text rules only."""
    if _HINT(text) is None:
        return mask(text)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return mask(text)
    if not isinstance(value, dict):
        return mask(text)
    try:
        masked = _walk(value, mask, True)
    except RecursionError:
        return mask(text)
    return mask(text) if masked == value else json.dumps(masked, ensure_ascii=False)


class RedactingFilter(logging.Filter):
    """A ``logging.Filter`` that masks secrets in every record's message and arguments.

    ``logging.getLogger("agentlab").addFilter(RedactingFilter())`` (or on a handler, to cover
    every logger that handler prints). The record's ``msg`` becomes the formatted, masked text.
    """

    def __init__(self, secrets: Iterable[str] = (), name: str = "") -> None:
        super().__init__(name)
        self.secrets = tuple(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: mask what is there
            message = str(record.msg)
        record.msg, record.args = redact_text(message, self.secrets), None
        if record.exc_info and not record.exc_text:  # format the traceback now, to mask it
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text, self.secrets)
        return True

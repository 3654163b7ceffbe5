"""Token counting with tiktoken, fully offline (taught in notebook 04).

tiktoken normally downloads its BPE files on first use. agentlab ships the two encodings it
needs under ``data/tiktoken/`` and builds the ``tiktoken.Encoding`` from them, checking the
published SHA-256 first, so counting works in a classroom with no network. Nothing is loaded
at import time; an encoding is built once, on first use, and cached.

``count_message_tokens`` follows OpenAI's published counting recipe (the cookbook's
``num_tokens_from_messages`` / ``num_tokens_for_tools``): a fixed overhead per message, the
encoded length of each field, one more token for a ``name``, three to prime the reply, and a
per-tool cost for function schemas. Real servers may differ by a few tokens; the simulator
uses the same function, so offline numbers are consistent with each other.

Building an encoding is not free: o200k_base takes about 0.5 s and 75 MB. The ``*_bound``
functions answer "could this be more than N tokens?" without it: every token of a byte-level
BPE (cl100k_base, o200k_base) stands for at least one UTF-8 byte, so a text's byte count is an
upper bound on its token count (``tests/test_tokens.py`` checks this against tiktoken). The
message manager of chapter 04 keeps the bound and counts exactly only near its budget.
"""
from __future__ import annotations

import binascii
import hashlib
import json
import threading
from functools import lru_cache
from typing import Any, Iterable

from .bundle import data_path
from .models import DEFAULT_MODEL

__all__ = [
    "DATA_DIR",
    "ENCODING_SHA256",
    "encoding_for",
    "get_encoding",
    "count_text_tokens",
    "count_message_tokens",
    "count_messages_tokens",
    "count_tools_tokens",
    "encoding_name_for",
    "text_tokens_bound",
    "message_tokens_bound",
    "tools_tokens_bound",
    "messages_tokens_bound",
]

#: Where the bundled encodings live (``data/tiktoken``, installed with the package).
DATA_DIR = data_path("tiktoken")

#: The hashes tiktoken itself checks for the published files.
ENCODING_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

_BUILD_LOCK = threading.Lock()

# Per-message costs from OpenAI's published counting recipe.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3


def _read_ranks(name: str) -> dict[bytes, int]:
    """Read ``data/tiktoken/<name>.tiktoken`` after checking its SHA-256."""
    path = DATA_DIR / f"{name}.tiktoken"
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: agentlab needs its bundled tiktoken files (see data/README.md); reinstall agentlab (pip install -e .) or restore the file with `git checkout data/tiktoken`")
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != ENCODING_SHA256[name]:
        raise ValueError(f"{path} has SHA-256 {digest}, expected {ENCODING_SHA256[name]}: "
                         "the file is corrupt; restore it with `git checkout data/tiktoken` "
                         "(or reinstall agentlab)")
    # one "<base64 token> <rank>" pair per line; decoded in C (map/zip): twice as fast as a
    # Python loop, which matters because every process pays it before its first count
    words = raw.split()
    return dict(zip(map(binascii.a2b_base64, words[0::2]), map(int, words[1::2])))


@lru_cache(maxsize=None)
def get_encoding(name: str):
    """The tiktoken ``Encoding`` called ``name``, built from the bundled file (never downloaded)."""
    if name not in ENCODING_SHA256:
        raise ValueError(f"unknown encoding {name!r}; bundled: {sorted(ENCODING_SHA256)}")
    import tiktoken  # lazy: heavy
    from tiktoken_ext import openai_public  # lazy: heavy

    # tiktoken's own constructor knows the regex and special tokens; we only swap the loader
    # it calls for one that reads our checked local file. The lock keeps the swap private.
    with _BUILD_LOCK:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = lambda *_a, **_k: _read_ranks(name)
        try:
            spec = getattr(openai_public, name)()
        finally:
            openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**spec)


def encoding_name_for(model: str) -> str:
    """The name of the encoding a model uses: gpt-4o / gpt-4.1 / o-series -> o200k_base;
    gpt-4 / gpt-3.5 -> cl100k_base; anything unknown -> o200k_base. Builds nothing."""
    m = (model or "").lower().split("/")[-1]
    if m.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")):
        return "o200k_base"
    if m.startswith(("gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada")):
        return "cl100k_base"
    return "o200k_base"


def encoding_for(model: str):
    """The encoding a model uses (``encoding_name_for``), built on first use."""
    return get_encoding(encoding_name_for(model))


def count_text_tokens(text: str, model: str = DEFAULT_MODEL) -> int:
    """Number of tokens in a plain string."""
    return len(encoding_for(model).encode(text, disallowed_special=()))


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _exact_len(model: str):
    enc = encoding_for(model)
    return lambda text: len(enc.encode(text, disallowed_special=()))


def text_tokens_bound(text: str) -> int:
    """An upper bound on ``count_text_tokens(text)`` for any bundled encoding, without building
    one: the UTF-8 bytes (a lone surrogate, which tiktoken replaces by U+FFFD, counts 3)."""
    return len(text.encode("utf-8", "surrogatepass"))


def _message_tokens(message: dict, length) -> int:
    total = TOKENS_PER_MESSAGE
    for key, value in message.items():
        text = _value_text(value)
        if text:
            total += length(text)
        if key == "name":
            total += TOKENS_PER_NAME
    return total


def count_message_tokens(message: dict, model: str = DEFAULT_MODEL) -> int:
    """Tokens one message costs in a prompt (without the 3 reply-priming tokens)."""
    return _message_tokens(message, _exact_len(model))


def message_tokens_bound(message: dict) -> int:
    """An upper bound on ``count_message_tokens(message)`` (UTF-8 bytes for encoded lengths)."""
    return _message_tokens(message, text_tokens_bound)


def _tools_tokens(tools: list[dict], length, func_init: int) -> int:
    prop_init, prop_key, enum_init, enum_item, func_end = 3, 3, -3, 3, 12
    total = 0
    for tool in tools:
        fn = tool.get("function", tool)
        total += func_init
        desc = (fn.get("description") or "").rstrip(".")
        total += length(f"{fn.get('name', '')}:{desc}")
        props = (fn.get("parameters") or {}).get("properties") or {}
        if props:
            total += prop_init
            for key, spec in props.items():
                total += prop_key
                if isinstance(spec, dict) and spec.get("enum"):
                    total += enum_init  # an enum costs at least enum_item > 3: the sum grows
                    for item in spec["enum"]:
                        total += enum_item + length(str(item))
                ptype = spec.get("type", "object") if isinstance(spec, dict) else "object"
                pdesc = (spec.get("description") or "").rstrip(".") if isinstance(spec, dict) else ""
                total += length(f"{key}:{_value_text(ptype)}:{pdesc}")
    return total + func_end


def count_tools_tokens(tools: Iterable[dict] | None, model: str = DEFAULT_MODEL) -> int:
    """Tokens that function-tool schemas add to a prompt (the cookbook's recipe)."""
    tools = list(tools or [])
    if not tools:
        return 0
    func_init = 10 if encoding_name_for(model) == "cl100k_base" else 7
    return _tools_tokens(tools, _exact_len(model), func_init)


def tools_tokens_bound(tools: Iterable[dict] | None) -> int:
    """An upper bound on ``count_tools_tokens(tools, model)`` for any bundled encoding."""
    tools = list(tools or [])
    return _tools_tokens(tools, text_tokens_bound, 10) if tools else 0


def count_messages_tokens(messages: Iterable[dict], model: str = DEFAULT_MODEL,
                          tools: Iterable[dict] | None = None) -> int:
    """Prompt tokens for a whole request: every message, reply priming, and tools if given."""
    return (sum(count_message_tokens(m, model) for m in messages) + REPLY_PRIMING
            + count_tools_tokens(tools, model))


def messages_tokens_bound(messages: Iterable[dict], tools: Iterable[dict] | None = None) -> int:
    """An upper bound on ``count_messages_tokens(messages, model, tools)`` for any model."""
    return (sum(message_tokens_bound(m) for m in messages) + REPLY_PRIMING
            + tools_tokens_bound(tools))

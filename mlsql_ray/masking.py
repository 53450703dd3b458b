"""Secrets out of what is echoed: the one place that decides what a secret looks like in text.

Everything that shows a statement, a URL or a line of a script goes through ``mask`` (the
``connect`` message, JDBC errors, ``!show jobs``, the source line under an error, error texts):

* a URL's password, ``scheme://user:PASSWORD@host``;
* a value given to a name that says secret (``password``, ``pwd``, ``passwd``, ``token``,
  ``secret``, ``key``, ``credential``, ``auth``): ``password="…"`` (any MLSQL quote),
  ``password=…`` up to the next separator (URL query parameters, ``"TOKEN=…"`` arguments),
  and ``set password = …;`` unquoted.

Each becomes ``***``. Masking is for what people read: it never touches a table's data.
"""

from __future__ import annotations

import re

MASK = "***"
# ... but not a name for the kind of a secret (RAY_AUTH_MODE=token, auth_type=basic, key_id_file)
_SECRET_WORDS = "pass|pwd|secret|token|credential|key|auth"
_NAME = rf"\b\w*(?:{_SECRET_WORDS})\w*(?<!mode)(?<!type)(?<!method)(?<!file)(?<!path)"
SECRET_NAME = re.compile(_NAME, re.IGNORECASE)
"""A name whose value is a secret (an option, a variable, a URL parameter): use ``fullmatch``."""


def is_secret_name(name: str) -> bool:
    """Whether ``name``'s value is a secret; a dotted name (Hadoop's ``fs.s3a.secret.key``) is
    when any of its parts is."""
    return any(SECRET_NAME.fullmatch(part) for part in name.split("."))


_QUOTED = r"""'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`"""
# (regex, group holding the secret)
_RULES = (
    # scheme://AUTHORITY: the password is after the userinfo's first ':' up to the authority's last '@'
    (re.compile(r"[a-z][a-z0-9+.\-]*://[^\s/:@?#\"'`]*:(?P<secret>[^\s/?#\"'`]*)@", re.IGNORECASE), "secret"),
    (re.compile(rf"{_NAME}\s*=\s*(?P<quoted>{_QUOTED})", re.IGNORECASE), "quoted"),
    # a quoted dotted name: set "fs.s3a.secret.key"="…", where `fs.s3a.access.key`="…"
    (re.compile(rf"{_NAME}[\"'`]\s*=\s*(?P<quoted>{_QUOTED})", re.IGNORECASE), "quoted"),
    # a ':' the text goes on after ("…password=x: why") ends the value; one inside it does not
    (re.compile(rf"{_NAME}=(?P<secret>(?:[^\s\"'`&;,):]|:(?!\s|$))+)", re.IGNORECASE), "secret"),
    (re.compile(rf"\bset\s+{_NAME}\s*=\s*(?P<secret>[^\s\"'`;][^;\n]*?)(?=\s+where\b|\s*;|\s*$)",
                re.IGNORECASE | re.MULTILINE), "secret"),
)


# What every rule's match contains (a secret's name, or a URL's ://): the common text that has none
# (every statement is masked for !show jobs) is ruled out in microseconds, where the rules try their
# ``\b\w*`` start at every word; the case-insensitive search is for text that is not ASCII (whose
# case folding ``str.lower`` would not match exactly: ``ſ`` is an ``s`` to it), 5x slower
_HINTS = (*_SECRET_WORDS.split("|"), "://")
_ANY_HINT = re.compile("|".join(_HINTS), re.IGNORECASE)


def _may_hold_secrets(text: str) -> bool:
    if text.isascii():
        lowered = text.lower()
        return any(hint in lowered for hint in _HINTS)
    return _ANY_HINT.search(text) is not None


def _spans(text: str) -> list[tuple[int, int]]:
    """Where the secrets of ``text`` are, as sorted, non-overlapping (start, end) pairs."""
    if not _may_hold_secrets(text):
        return []
    found = []
    for pattern, group in _RULES:
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if group == "quoted":  # keep the quotes: password="***"
                quote = 3 if match.group(group)[:3] in ("'''", '"""') else 1
                start, end = start + quote, end - quote
            if end > start:
                found.append((start, end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def secrets_in(text: str) -> list[str]:
    """The secrets ``mask`` would hide in ``text`` (to scrub them from texts that quote them
    without their names, such as a driver's error message)."""
    return [text[start:end] for start, end in _spans(text)]


def mask(text: str) -> str:
    """``text`` with every secret replaced by ``***``."""
    return mask_at(text, None)[0]


def mask_at(text: str, column: int | None) -> tuple[str, int | None]:
    """``mask(text)``, and where 1-based ``column`` of ``text`` is in it (for a caret under a
    masked line: inside a secret it points at the secret's ``***``)."""
    pieces, moved, done = [], 0, 0
    new_column = column
    for start, end in _spans(text):
        pieces += [text[done:start], MASK]
        if column is not None and column - 1 >= start:
            new_column = start + moved + 1 if column - 1 < end else column + moved + len(MASK) - (end - start)
        moved += len(MASK) - (end - start)
        done = end
    pieces.append(text[done:])
    return "".join(pieces), new_column

"""The ``where`` options of statements, data sources, ETs and algorithms, and the settings read
like them: one ``Param`` type describing an option, one reader of typed values (booleans, whole
numbers, numbers, one of a few words: names and values matched ignoring case, as Byzer's
``CaseInsensitiveMap`` and Scala's ``toBoolean`` do), one parser for the parameter groups
(``fitParam.N.name``), one check of the options nobody knows, and the table that lists a
source's or an ET's options (``params_table``).

An unknown option is a warning, not an error: Byzer ignores it, and a script Byzer runs must run.
The check names the known options and the likeliest one meant; it goes to the statement running
(``noting``: the session collects each statement's warnings into its result), and is an error
when that statement is strict (``set strictOptions="true";``) or when no statement is running.

Low in the layering (only ``errors`` below it) so that every room, the object store's settings
included, reads options with it.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa

from .errors import MLSQLError

#: the session variable that turns unknown options into errors (``set strictOptions="true";``)
STRICT_OPTIONS = "strictOptions"

_BOOLEANS = {"true": True, "false": False}


def boolean(text: str) -> bool:
    """``true`` or ``false`` in any case, around blanks (Scala's ``toBoolean``); a ``Param``'s
    ``convert``, so a bad value is a ValueError its reader words."""
    value = _BOOLEANS.get(text.strip().lower())
    if value is None:
        raise ValueError(f'expected "true" or "false", not {text!r}')
    return value


def get(options: Mapping[str, str], key: str, default: str | None = None) -> str | None:
    """The value of option ``key``, its name matched ignoring case (the exact spelling first)."""
    if key in options:
        return options[key]
    folded = key.lower()
    return next((value for name, value in options.items() if name.lower() == folded), default)


def flag(options: Mapping[str, str], key: str, default: bool, what: str = "") -> bool:
    """A ``key="true"|"false"`` option, ``default`` when not given. ``what``: whose option, for the error."""
    value = get(options, key)
    if value is None:
        return default
    if value.strip().lower() not in _BOOLEANS:
        raise MLSQLError(f'{_whose(what)}{key} must be "true" or "false", not {value!r}')
    return _BOOLEANS[value.strip().lower()]


def integer(options: Mapping[str, str], key: str, default: int, minimum: int | None = None, what: str = "") -> int:
    """A whole-number option, ``default`` when not given, at least ``minimum`` if one is given."""
    value = get(options, key)
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise MLSQLError(f"{_whose(what)}{key} must be a whole number, not {value!r}") from None
    if minimum is not None and number < minimum:
        raise MLSQLError(f"{_whose(what)}{key} must be at least {minimum}, not {number}")
    return number


def number(options: Mapping[str, str], key: str, default: float, what: str = "") -> float:
    """A numeric option (``0.5``, ``1e-3``), ``default`` when not given."""
    value = get(options, key)
    if value is None:
        return default
    try:
        return float(value.strip())
    except ValueError:
        raise MLSQLError(f"{_whose(what)}{key} must be a number, not {value!r}") from None


def choice(options: Mapping[str, str], key: str, choices: Iterable[str], default: str, what: str = "") -> str:
    """One of ``choices``, matched ignoring case and given back as ``choices`` spell it."""
    value = get(options, key)
    if value is None or not value.strip():
        return default
    by_fold = {c.lower(): c for c in choices}
    found = by_fold.get(value.strip().lower())
    if found is None:
        raise MLSQLError(f"{_whose(what)}{key} must be one of {', '.join(by_fold.values())}, not {value!r}"
                         f"{_did_you_mean(value, by_fold.values())}")
    return found


def _whose(what: str) -> str:
    return f"{what}: " if what else ""


def _did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` naming the known word closest to ``word`` (case aside), or nothing."""
    by_fold = {k.lower(): k for k in known}
    close = difflib.get_close_matches(word.lower(), list(by_fold), n=1)
    return f" (did you mean {by_fold[close[0]]!r}?)" if close else ""


@dataclass
class Notes:
    """The warnings of one running statement (each once), and whether they are errors instead."""

    strict: bool = False
    warnings: list[str] = field(default_factory=list)
    _taken: int = 0

    def take(self) -> list[str]:
        """The warnings noted since the last take."""
        new, self._taken = self.warnings[self._taken:], len(self.warnings)
        return new


_running = threading.local()  # per thread: the Notes of the statements running, innermost last


@contextlib.contextmanager
def noting(notes: Notes) -> Iterator[Notes]:
    """Send the warnings of what runs inside to ``notes`` (a statement nested in another, an
    include's, notes its own)."""
    stack = _running.__dict__.setdefault("stack", [])
    stack.append(notes)
    try:
        yield notes
    finally:
        stack.remove(notes)  # this one, even when a generator closes out of order


def warn(text: str, going_on: str = "") -> None:
    """A warning for the running statement, once, ending with ``going_on`` (what happens instead);
    an error if the statement is strict or none is running."""
    _running.given = getattr(_running, "given", 0) + 1
    stack = getattr(_running, "stack", None)
    if not stack or stack[-1].strict:
        raise MLSQLError(text)
    if text + going_on not in stack[-1].warnings:
        stack[-1].warnings.append(text + going_on)


def warnings_given() -> int:
    """How many warnings this thread has given: a result worked out while the count moved carries
    warnings, so it is not kept for reuse (a later statement must give them again)."""
    return getattr(_running, "given", 0)


def _unchanged(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Param:
    """One option as users write it: ``name``, its ``default`` and ``description`` (what
    ``!show "et/params/NAME"``, ``!show "datasources/params/NAME"`` and ``load modelParams`` list).

    An algorithm's parameter also says how it reaches the estimator: ``target``, the estimator
    keyword (None: accepted for compatibility and ignored, e.g. Spark's ``checkpointInterval``),
    ``convert`` (the text → a value) and ``adapt`` (Spark's value → the library's, e.g. "em" → "batch")."""

    name: str
    default: Any
    description: str
    target: str | None = None
    convert: Callable[[str], Any] = str
    adapt: Callable[[Any], Any] = _unchanged


#: ``fitParam.N.name``: the option ``name`` of parameter group N
_GROUP_OPTION = re.compile(r"fitParam\.(\d+)\.(\w+)", re.IGNORECASE)
GROUP_PREFIX = "fitparam."

#: options every ET and algorithm accepts and ignores, as Byzer's do: its estimators' common
#: options (``ml/algs/*.md`` write ``keepVersion`` and ``evaluateTable`` for every one)
ACCEPTED_EVERYWHERE: tuple[str, ...] = ()


def is_configuration(key: str) -> bool:
    """A dotted key (``fs.s3a.access.key``, ``es.nodes``): Hadoop's or a connector's setting, which
    a data source hands to the storage under it rather than reads itself."""
    return "." in key and not is_group_option(key)


def is_group_option(key: str) -> bool:
    return key.lower().startswith(GROUP_PREFIX)


def groups(options: Mapping[str, str]) -> dict[int, dict[str, str]]:
    """The parameter groups ``fitParam.N.name`` by N (in increasing order), each its options by
    name; a ``fitParam.`` option of another shape is the user's mistake."""
    found: dict[int, dict[str, str]] = {}
    for key, value in options.items():
        if is_group_option(key):
            match = _GROUP_OPTION.fullmatch(key)
            if match is None:
                raise MLSQLError(f"bad option {key!r}: group parameters are written `fitParam.N.name`, N a number")
            found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return dict(sorted(found.items()))


def check_known(options: Iterable[str], known: Iterable[str], what: str, ignore_case: bool = True) -> list[str]:
    """Warn of the options ``what`` does not know (``warn``), naming the known ones and the
    likeliest meant; gives back those it knows. ETs and data sources match names ignoring case, as
    Byzer does; an algorithm's parameters are matched exactly (its estimator reads them so). A group
    option ``fitParam.N.name`` is known when ``fitParam.N.name`` (written with the letter N) is."""
    options = list(options)
    known = list(dict.fromkeys(known))
    fold = str.lower if ignore_case else str
    accepted = {fold(name) for name in (*known, *ACCEPTED_EVERYWHERE)}
    unknown = [key for key in options
               if fold(key) not in accepted and fold(_GROUP_OPTION.sub(r"fitParam.N.\2", key)) not in accepted]
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        named = ", ".join(f"{key!r}{_did_you_mean(key, known)}" for key in unknown)
        warn(f"{what} has no option{plural} {named}; it knows: {', '.join(known) or 'none'}",
             f"; ignored (set {STRICT_OPTIONS}=\"true\" to make this an error)")
    return [key for key in options if key not in unknown]


_PARAMS_SCHEMA = pa.schema([("param", pa.string()), ("description", pa.string()), ("default", pa.string())])


def params_table(params: tuple[Param, ...]) -> pa.Table:
    """Options as ``!show "datasources/params/NAME"`` and ``!show "et/params/NAME"`` show them:
    Byzer's columns ``param`` and ``description``, and the default."""
    return pa.table({"param": [p.name for p in params], "description": [p.description for p in params],
                     "default": [p.default for p in params]}, schema=_PARAMS_SCHEMA)

"""The ``!`` commands beyond the basic ones of ``engine.commands``, one module per family:
``show`` (``!show ...``), ``filesystem`` (``!hdfs``/``!fs``), ``tables`` (commands that name or
write tables) and ``scripts`` (``!println``, ``!runScript``, ``!profiler``, ``!kill``). Each module's
``COMMANDS`` maps command names to handlers ``(session, ast.Command) -> Result``."""

from __future__ import annotations

from ...errors import MLSQLError


def named_arguments(args: list[str] | tuple[str, ...], usage: str) -> dict[str, str]:
    """Byzer's ``_ -i T -num 4 -o OUT`` argument form as {"i": "T", "num": "4", "o": "OUT"}."""
    if not args or args[0] != "_" or len(args) % 2 != 1 or not all(a.startswith("-") for a in args[1::2]):
        raise MLSQLError(f"usage: {usage}")
    return {k[1:]: v for k, v in zip(args[1::2], args[2::2])}

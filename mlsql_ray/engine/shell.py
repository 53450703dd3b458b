"""``set K = "command" where type="shell"``: the command runs in ``/bin/sh`` with the session's
variables in its environment, never pasted into its text.

``${a}`` in the command is the shell's own expansion of the environment variable ``a``, so a value
(which may come from table data through ``type="sql"``) stays data: quotes, ``;`` or ``$(...)`` in it
are never read as shell syntax. This is the shape GitHub recommends for untrusted input in Actions'
``run`` steps and Airflow's ``BashOperator(env=...)`` has; quoting values into the text instead is
one forgotten context (double quotes, here-documents, ``eval``) away from an injection.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from typing import Mapping

from ..errors import MLSQLError

DEFAULT_TIMEOUT_S = 60.0
STDERR_TAIL_CHARS = 500
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_SH_NAME = re.compile(r"#?([A-Za-z_][A-Za-z0-9_]*)")  # the parameter in ${a}, ${#a}, ${a:-x}, ...


def run_shell(key: str, command: str, variables: Mapping[str, str], timeout: str | None) -> str:
    """Run ``command`` for ``set key``; its stdout, stripped. Every session variable the command
    names as ``${name}`` is in its environment; a non-zero exit or the timeout is an error."""
    seconds = _timeout(timeout)
    env = {**os.environ, **_exported(key, command, variables)}
    process = subprocess.Popen(command, shell=True, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, encoding="utf-8", errors="replace",
                               start_new_session=True)  # its own process group: a timeout stops its children too
    with process:
        try:
            out, err = process.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise MLSQLError(f"shell command for {key} did not finish within {seconds:g} s and was stopped "
                             f"(where timeout=\"SECONDS\" sets the limit; default {DEFAULT_TIMEOUT_S:g})") from None
        except BaseException:  # an interrupt: nothing of the command may outlive the statement
            _kill(process)
            raise
    if process.returncode != 0:
        how = (f"was killed by signal {-process.returncode}" if process.returncode < 0
               else f"failed with exit code {process.returncode}")
        tail = err.strip()[-STDERR_TAIL_CHARS:]
        raise MLSQLError(f"shell command for {key} {how}" + (f": {tail}" if tail else " (no output on stderr)"))
    return out.strip()


def _exported(key: str, command: str, variables: Mapping[str, str]) -> dict[str, str]:
    """The session variables ``command`` refers to as ``${name}``, checked like ``${}`` anywhere
    else: an unknown name is an error (unless the environment has it), and a variable whose name
    the shell cannot spell (``spark.x``, ``odd key``) is refused rather than silently empty."""
    exported = {}
    for match in _REFERENCE.finditer(command):
        inside = match.group(1).strip()
        name = _SH_NAME.match(inside)
        if name and name.group(1) in variables:
            if "\0" in variables[name.group(1)]:
                raise MLSQLError(f"variable {name.group(1)} holds a NUL character, which no environment variable can "
                                 f"carry to the shell command for {key}")
            exported[name.group(1)] = variables[name.group(1)]
        elif inside in variables:
            raise MLSQLError(f"variable {inside!r} cannot reach the shell command for {key}: shell variable names are "
                             f"letters, digits and _ (not starting with a digit): copy it to such a name first, "
                             f"like set v = \"${{{inside}}}\";")
        elif name and name.end() == len(inside) and inside not in os.environ:
            raise MLSQLError(f"undefined variable ${{{inside}}} in the shell command for {key}: "
                             f"set it first with `set {inside} = \"...\";` or --set {inside}=...")
    return exported


def _timeout(text: str | None) -> float:
    if text is None:
        return DEFAULT_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise MLSQLError(f"timeout must be a positive number of seconds, not {text!r}")
    return seconds


def _kill(process: subprocess.Popen) -> None:
    """Stop the command's whole process group and reap it (its pipes close with it)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a child that left the group still holds the pipes: leave them to it
        pass

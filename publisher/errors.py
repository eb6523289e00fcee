"""What a user is told when something fails: the one mapping from an exception to a
one-line message and an exit status (the CLI and ``site watch`` both use it).

Exit status 0 is success, 1 when what was asked for failed (the message names the file and
the reason), 2 a usage error. Any other exception is a bug: its traceback is worth more
than a message.
"""

from __future__ import annotations

from .archive import ArchiveError
from .loader import SessionLoadError
from .theme import ThemeError
from .write import WriteError


class UsageError(Exception):
    """A command line that is well-formed for the parser but means nothing (exit 2)."""


FAILURES = (ArchiveError, SessionLoadError, ThemeError, WriteError)
"""What the user asked for failed: exit 1 with the message."""


def exit_status(exc: BaseException) -> int | None:
    """2 for a usage error, 1 for a failure of what was asked (a known error, or the
    operating system refusing a file), None for anything else (a bug)."""
    if isinstance(exc, UsageError):
        return 2
    if isinstance(exc, (*FAILURES, OSError)):
        return 1
    return None


def describe(exc: BaseException) -> str:
    """One line saying what failed: the message of a known error, ``<file>: <reason>`` for
    an operating system error, else the exception's type and message."""
    if isinstance(exc, (UsageError, *FAILURES)):
        return str(exc)
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    return f"{type(exc).__name__}: {exc}"

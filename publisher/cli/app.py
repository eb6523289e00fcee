"""The typer applications and what every command shares: ``--debug``, the mapping of
errors to one stderr line and an exit status, and printing."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NoReturn, TypeVar

import typer

from .. import __version__
from .options import Debug

T = TypeVar("T")


def example(*lines: str) -> str:
    """A command's ``--help`` epilog: its example command lines, last, as written (``\b``
    keeps click from rewrapping them)."""
    return "\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)


app = typer.Typer(
    name="polyglav",
    help="Publish Polyglav session logs: list, read, export them, and build a static site.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=example("polyglav export '#ab12cd' --project sample_sessions --out -"),
)
sessions_app = typer.Typer(
    help="List saved sessions like /sessions.",
    epilog=example(
        "polyglav sessions --project sample_sessions",
        "polyglav sessions --format json --project sample_sessions",
    ),
    invoke_without_command=True,
    rich_markup_mode=None,
)
site_app = typer.Typer(
    help="Build, watch and serve the static website of an archive.",
    epilog=example("polyglav site build --project sample_sessions --out site"),
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(sessions_app, name="sessions")
app.add_typer(site_app, name="site")


@dataclass(slots=True)
class CliState:
    """What the top-level options set for the command that runs (``ctx.obj``)."""

    debug: bool = False
    """Show tracebacks instead of one-line errors."""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"polyglav-publisher {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    debug: Debug = False,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    """Publish Polyglav session logs."""
    ctx.obj = CliState(debug=debug)


def debugging(ctx: typer.Context, debug: bool) -> bool:
    """True when ``--debug`` was given before or after the command name."""
    state = ctx.find_root().obj
    return debug or (isinstance(state, CliState) and state.debug)


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr, then exit with ``code``."""
    say("error", message)
    raise typer.Exit(code)


def warn(message: str) -> None:
    say("warning", message)


def say(kind: str, message: str) -> None:
    """``polyglav: <kind>: <message>`` on stderr (:func:`tell`)."""
    tell(f"polyglav: {kind}: {message}")


def tell(line: str) -> None:
    """A line on stderr, terminal-safe: messages name files and quote sessions, and a
    control or bidirectional control in them is shown as an escape
    (:func:`..render.text.terminal_safe`), never sent to the terminal."""
    from ..render.text import terminal_safe

    typer.echo(terminal_safe(line), err=True)


def guarded(ctx: typer.Context, debug: bool, action: Callable[[], T]) -> T:
    """Run ``action``; a known failure becomes one stderr line and its exit status
    (:mod:`publisher.errors`), with the traceback instead under ``--debug``."""
    try:
        return action()
    except BrokenPipeError:
        quiet_broken_pipe()
    except Exception as exc:
        from ..errors import describe, exit_status

        status = exit_status(exc)
        if status is None or debugging(ctx, debug):
            raise
        fail(describe(exc), status)


def quiet_broken_pipe() -> NoReturn:
    """The reader closed the pipe (``polyglav export X --out - | head``): stop quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise typer.Exit(0)


EMIT_BATCH = 1000
"""Lines printed at once (a listing of 100,000 sessions is not 100,000 writes)."""


def emit(lines: Iterable[str]) -> None:
    """Print ``lines`` to stdout, a batch at a time, stopping quietly when the reader goes
    away."""
    try:
        batch: list[str] = []
        for line in lines:
            batch.append(line)
            if len(batch) >= EMIT_BATCH:
                typer.echo("\n".join(batch))
                batch.clear()
        if batch:
            typer.echo("\n".join(batch))
    except BrokenPipeError:
        quiet_broken_pipe()


def main() -> None:
    app()

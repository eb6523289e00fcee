"""Every option of the command line, declared once (typer ``Annotated`` types)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer


def _rules_version() -> str:
    """The vendored rule set's version, for ``--help`` (its small origin file is read, not
    the rules: ``--help`` starts without them)."""
    path = Path(__file__).resolve().parent.parent / "rules" / "gitleaks.json"
    try:
        return str(json.loads(path.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return "(rule set missing)"


Debug = Annotated[
    bool,
    typer.Option("--debug", help="Show tracebacks on errors (before or after the command)."),
]
Project = Annotated[
    Path | None,
    typer.Option(
        "--project",
        "-p",
        help="Project folder (holding .polyglav/) or a folder of session files. "
        "Default: the nearest folder upwards holding .polyglav/.",
        show_default=False,
    ),
]
Run = Annotated[
    str | None,
    typer.Option(
        "--run",
        help="Session to read: #<id>, session:<name>, a name or a role. "
        "Default: the most recently updated session (said on stderr).",
        show_default=False,
    ),
]
RunA = Annotated[
    str,
    typer.Argument(
        metavar="A", help="The earlier run: #<id>, session:<name>, a name or a role (as --run)."
    ),
]
RunB = Annotated[
    str,
    typer.Argument(
        metavar="B", help="The later run: #<id>, session:<name>, a name or a role (as --run)."
    ),
]
SessionName = Annotated[
    str,
    typer.Argument(help="Session: #<id>, session:<name>, a name, a role, or a session file."),
]
Redact = Annotated[
    bool,
    typer.Option(
        "--redact",
        help="Replace secrets with [REDACTED:<kind>] before rendering; the output says how "
        f"many. Rules: gitleaks {_rules_version()} (API keys and tokens of 200+ providers), "
        "private keys, JWTs, passwords in URLs, bearer and basic credentials, values "
        "assigned to names saying secret, password, token, credential or key "
        "(docs/redaction.md). Review with polyglav redact-report.",
    ),
]
RedactValues = Annotated[
    Path | None,
    typer.Option(
        "--redact-values",
        help="A file listing more values to redact, one per line (# comments); implies --redact.",
        show_default=False,
    ),
]
SiteOut = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="Site folder: receives exactly the published files. "
        "Default: .polyglav/site/ of the project.",
        show_default=False,
    ),
]
CacheDir = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Where the build keeps its state between builds (never published; losing it "
        "costs only time). Default: ~/.cache/polyglav/site-<hash of the site folder>.",
        show_default=False,
    ),
]
Theme = Annotated[
    str | None,
    typer.Option(
        "--theme",
        "-t",
        help="Built-in theme name (default, paper) or a folder overriding some templates.",
        show_default=False,
    ),
]
Search = Annotated[
    bool,
    typer.Option(
        "--search/--no-search",
        help="Build the full-text search index (search/, works from file:// too).",
    ),
]
NoWait = Annotated[
    bool,
    typer.Option(
        "--no-wait",
        help="When another build of this site is running, fail at once (exit 1) instead "
        "of waiting for it to finish.",
    ),
]
Scheduler = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        envvar="DASK_SCHEDULER_ADDRESS",
        help="Run the scan and the render on the Dask cluster of this scheduler "
        "(tcp://HOST:8786; needs polyglav-publisher[dask]); the sessions, site and cache "
        "folders must be at the same paths on every worker. See docs/distributed.md.",
        show_default=False,
    ),
]
BuildQuiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bar and no summary line.")
]
WatchQuiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="No line per build (warnings and errors still).")
]
QuietWindow = Annotated[
    float,
    typer.Option("--quiet-window", min=0.0, help="Seconds without changes before rebuilding."),
]
Strict = Annotated[
    bool, typer.Option("--strict", help="Fail (exit 1) when any file does not load or warns.")
]
Port = Annotated[int, typer.Option("--port", min=0, max=65535, help="Port; 0 picks a free one.")]
Bind = Annotated[str, typer.Option("--bind", help="Address to listen on.")]
AllowHost = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-host",
        help="Also answer requests naming this host (a reverse proxy's name, a .local"
        " name, a LAN address); repeatable. Known anyway: localhost, 127.0.0.1, [::1]"
        " and the --bind address.",
        show_default=False,
    ),
]
_FAIL_ON_HELP = (
    "Exit 1 when any of these happened (comma list): error (an errors entry or a turn with "
    "status error), tool-error, denied, declined, truncated, cancelled, running, secret (a "
    "credential left in what is published: without --redact, or in a session name); one "
    "stderr line per kind names the turn."
)
_SUB_SESSIONS_HELP = "Count the sub-sessions (delegations, at any depth) with their parent"
FailOn = Annotated[
    str | None,
    typer.Option("--fail-on", metavar="KINDS", help=_FAIL_ON_HELP, show_default=False),
]
"""``check``'s ``--fail-on``."""
ExportFailOn = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="KINDS",
        help=_FAIL_ON_HELP + " The export is still written.",
        show_default=False,
    ),
]
"""``export``'s ``--fail-on`` (the file is written whatever the verdict)."""
SubSessions = Annotated[
    bool, typer.Option("--sub-sessions/--no-sub-sessions", help=_SUB_SESSIONS_HELP + ".")
]
"""``check``'s ``--sub-sessions``."""
ExportSubSessions = Annotated[
    bool,
    typer.Option(
        "--sub-sessions/--no-sub-sessions",
        help=_SUB_SESSIONS_HELP + "; --format html puts them in the same file.",
    ),
]
"""``export``'s ``--sub-sessions``."""
Summary = Annotated[
    str | None,
    typer.Option(
        "--summary",
        metavar="FILE|-",
        help="Write a short Markdown account for a CI job summary or a pull-request comment "
        '(- for stdout), e.g. --summary "$GITHUB_STEP_SUMMARY".',
        show_default=False,
    ),
]
LinkBase = Annotated[
    str | None,
    typer.Option(
        "--link-base",
        metavar="URL",
        help="Where the site is published (or, ending in .html, the single-page export): the "
        "summary links its findings to the turn anchors there.",
        show_default=False,
    ),
]
PricesFile = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        metavar="FILE",
        help="Price tokens with this table (JSON, USD per million tokens; docs/usage.md) "
        "instead of the one genai-prices ships. A model it does not list is unpriced.",
        show_default=False,
    ),
]
MaxCost = Annotated[
    str | None,
    typer.Option(
        "--max-cost",
        metavar="USD",
        help="Exit 1 when the session (with its sub-sessions, unless --no-sub-sessions) cost "
        "more than USD dollars, or when its cost is unknown (a model is unpriced).",
        show_default=False,
    ),
]
MaxTokens = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        metavar="N",
        min=0,
        help="Exit 1 when the session (with its sub-sessions, unless --no-sub-sessions) spent "
        "more than N tokens (input, cache reads and writes, and output).",
        show_default=False,
    ),
]
ListFormat = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="text (a table) or json (one object a session, with tokens and cost; "
        "docs/usage.md has its schema).",
    ),
]
ImportAgent = Annotated[
    str,
    typer.Argument(
        help="Whose logs: claude-code, codex or aider.", metavar="claude-code|codex|aider"
    ),
]
ImportSources = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Log files or folders (never modified). Default: ~/.claude/projects/, "
        "~/.codex/sessions/, or ./.aider.chat.history.md.",
        show_default=False,
    ),
]
ImportQuiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="No summary line (problems are still shown).")
]
WatchImport = Annotated[
    list[str] | None,
    typer.Option(
        "--import",
        metavar="AGENT:PATH",
        help="Follow another agent's logs: import them (as polyglav import does) before each "
        "build and rebuild when they change, e.g. --import claude-code:~/.claude/projects/x; "
        "repeatable.",
        show_default=False,
    ),
]

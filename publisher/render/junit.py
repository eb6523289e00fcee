"""JUnit XML for the test-report views of CI systems (GitLab, Jenkins, Azure, GitHub actions).

One ``<testsuite>`` per session (the root first, then each sub-session, depth first), one
``<testcase>`` per turn, timed by the turn's duration. A turn with findings of the gated
kinds (``--fail-on``) gets a ``<failure>``: its message is the first finding, its type the
kinds found, its body every finding of the turn and then the turn's Markdown (as the export
writes it) cut at :data:`BODY_CHARS`. Findings that name no turn get a test case of their
own, ``session (no turn)``; a sub-session that does not load is a suite whose one test case
is an ``<error>`` saying why. Each suite's ``<system-out>`` lists every finding of the
session, gated or not.

The document is valid against the common JUnit schema (Apache Ant's format as written down
by Windy Road, ``tests/data/JUnit.xsd``): ``<testsuites>`` has no attributes, a suite has
``id``, ``package``, ``hostname`` (``localhost``: where the agent ran is not recorded) and a
``timestamp`` without a zone (the session's ``created_at`` in UTC).

Text is XML-escaped; characters XML 1.0 cannot carry (C0 controls but tab, newline and
carriage return; lone surrogates; U+FFFE and U+FFFF), and DEL and C1 controls, are shown
visibly as ``\\x1b``, ``\\ud800``, ``\\ufffe``. The report is streamed: one test case at a time,
so a 10,000-turn session never becomes one string.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from datetime import UTC

from ..gate import KINDS, Finding, Member, listed_kinds, session_findings, utc_time
from ..model import Session, Turn
from . import view
from .markdown import turn_markdown
from .text import first_line

#: The turn's Markdown in a failure body is cut after this many characters (as /print's
#: default ``print_max_chars``).
BODY_CHARS = 4000
#: At most this many findings are listed in a suite's ``<system-out>``.
SYSTEM_OUT_FINDINGS = 200
#: Timestamp for a suite whose session has no readable time.
EPOCH = "1970-01-01T00:00:00"

#: What XML 1.0 cannot carry, plus DEL and the C1 controls (a terminal would act on them).
UNCARRIABLE_XML_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every character XML cannot carry shown as ``\\xNN`` or ``\\uNNNN``."""
    return UNCARRIABLE_XML_RE.sub(_escape_char, text)


def xml_text(text: str) -> str:
    """Character data: escaped, a carriage return kept as ``&#13;`` (parsers drop a raw one)."""
    return (
        visible(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\r", "&#13;")
    )


def xml_attr(text: str) -> str:
    """An attribute value for ``"…"`` quotes: tabs and line breaks as references, so
    attribute normalisation keeps them."""
    return xml_text(text).replace('"', "&quot;").replace("\n", "&#10;").replace("\t", "&#9;")


def junit_report(members: Sequence[Member], kinds: Collection[str]) -> Iterator[str]:
    """The JUnit XML of a session tree (see :func:`~publisher.gate.session_tree`), streamed.

    ``kinds`` are the gated kinds: a turn fails when it has a finding of one of them.
    """
    wanted = frozenset(kinds)
    yield '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n'
    for suite_id, member in enumerate(members):
        if member.session is None:
            yield from _missing_suite(member, suite_id)
        else:
            yield from _suite(member, member.session, suite_id, wanted)
    yield "</testsuites>\n"


def _suite_name(name: str) -> str:
    """A suite or class name that stays non-empty once XML Schema collapses its spaces."""
    return name if name.strip() else "(blank session name)"


def _properties(values: list[tuple[str, str]]) -> Iterator[str]:
    yield "<properties>\n"
    for name, value in values:
        yield f'<property name="{name}" value="{xml_attr(value)}"/>\n'
    yield "</properties>\n"


def _missing_suite(member: Member, suite_id: int) -> Iterator[str]:
    name = xml_attr(_suite_name(member.name))
    yield (
        f'<testsuite id="{suite_id}" package="polyglav" name="{name}" hostname="localhost" '
        f'timestamp="{EPOCH}" tests="1" failures="0" errors="1" skipped="0" time="0.000">\n'
    )
    yield from _properties([("parent_id", member.parent), ("depth", str(member.depth))])
    problem = f"sub-session {member.name} of {member.parent}: {member.problem}"
    yield (
        f'<testcase name="session file" classname="{name}" time="0.000">'
        f'<error type="load" message="{xml_attr(problem)}">{xml_text(problem)}</error>'
        "</testcase>\n"
    )
    yield "<system-out></system-out>\n<system-err></system-err>\n</testsuite>\n"


def _timestamp(session: Session) -> str:
    """The session's start in UTC without a zone (``created_at``, else the first turn's)."""
    stamps = [session.created_at] + [turn.started_at for turn in session.turns[:1]]
    for stamp in stamps:
        when = utc_time(stamp)
        if when is not None:
            return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return EPOCH


def _seconds(turn: Turn) -> float:
    seconds = view.duration_seconds(turn)
    return seconds if seconds is not None and seconds > 0 else 0.0


def _suite(
    member: Member, session: Session, suite_id: int, wanted: frozenset[str]
) -> Iterator[str]:
    every = session_findings(session, listed_kinds(wanted))
    gated: dict[int | None, list[Finding]] = {}
    for finding in every:
        if finding.kind in wanted:
            gated.setdefault(finding.position, []).append(finding)
    loose = gated.pop(None, [])
    tests = len(session.turns) + (1 if loose else 0)
    failures = len(gated) + (1 if loose else 0)
    total = sum(_seconds(turn) for turn in session.turns)
    name = xml_attr(_suite_name(session.session_name))
    yield (
        f'<testsuite id="{suite_id}" package="polyglav" name="{name}" hostname="localhost" '
        f'timestamp="{_timestamp(session)}" tests="{tests}" failures="{failures}" errors="0" '
        f'skipped="0" time="{total:.3f}">\n'
    )
    yield from _properties(
        [
            ("session_name", session.session_name),
            ("session_id", session.session_id),
            ("kind", session.kind),
            ("role", session.role),
            ("version", session.version),
            ("created_at", session.created_at),
            ("updated_at", session.updated_at),
            ("parent_id", session.parent_id),
            ("depth", str(member.depth)),
            ("fail_on", ",".join(kind for kind in KINDS if kind in wanted)),
        ]
    )
    if loose:
        yield (
            f'<testcase name="session (no turn)" classname="{name}" time="0.000">'
            f"{_failure(loose, None)}</testcase>\n"
        )
    marks = view.boundaries(session)
    width = len(str(view.last_index(session)))
    for position, turn in enumerate(session.turns):
        title = f"turn {turn.index:0{width}d}"
        prompt = first_line(view.prompt_of(turn), 72)
        if prompt:
            title += f": {prompt}"
        head = f'<testcase name="{xml_attr(title)}" classname="{name}" time="{_seconds(turn):.3f}"'
        found = gated.get(position)
        if found is None:
            yield head + "/>\n"
        else:  # one string per test case: at most a few kB (the body is capped)
            failure = _failure(found, (session, turn, marks.get(turn.index, [])))
            yield f"{head}>{failure}</testcase>\n"
    yield "<system-out>"
    for finding in every[:SYSTEM_OUT_FINDINGS]:
        yield xml_text(f"{finding.where}: {finding.kind}: {finding.message}\n")
    if len(every) > SYSTEM_OUT_FINDINGS:
        yield f"and {len(every) - SYSTEM_OUT_FINDINGS} more findings\n"
    yield "</system-out>\n<system-err></system-err>\n</testsuite>\n"


def _failure(found: list[Finding], turn: tuple[Session, Turn, list[view.Boundary]] | None) -> str:
    message = found[0].message
    if len(found) > 1:
        message += f" (and {len(found) - 1} more)"
    kinds = ",".join(kind for kind in KINDS if any(f.kind == kind for f in found))
    body = "".join(f"{finding.where}: {finding.kind}: {finding.message}\n" for finding in found)
    if turn is not None:
        body += "\n" + _capped_markdown(*turn)
    return f'<failure type="{kinds}" message="{xml_attr(message)}">{xml_text(body)}</failure>'


def _capped_markdown(session: Session, turn: Turn, marks: list[view.Boundary]) -> str:
    """The turn's Markdown cut after :data:`BODY_CHARS` characters (the rest only counted)."""
    kept: list[str] = []
    budget = BODY_CHARS
    cut = 0
    for chunk in turn_markdown(session, turn, marks):
        if budget <= 0:
            cut += len(chunk)
        elif len(chunk) <= budget:
            budget -= len(chunk)
            kept.append(chunk)
        else:
            kept.append(chunk[:budget])
            cut += len(chunk) - budget
            budget = 0
    if cut:
        kept.append(
            f"\n… ({cut:,} more characters of this turn; the Markdown export has all of it)\n"
        )
    return "".join(kept)

"""aider chat histories: ``.aider.chat.history.md`` at a repository's root.

aider appends Markdown as it goes: ``# aider chat started at YYYY-MM-DD HH:MM:SS`` for each
launch, the operator's input as ``#### `` lines, its own output (commands' results, edits
applied, commits, warnings) as ``> `` lines, and the model's answer as plain Markdown in
between, ``SEARCH/REPLACE`` edit blocks included. Input and output lines end with two
spaces (Markdown line breaks), which are part of the framing and dropped.

The mapping: one session per ``# aider chat started at`` block (text before the first one
is a session of its own); ``#### `` input starts a turn, with a ``command`` part for a
``/command`` and a ``user`` part otherwise; ``> `` lines are ``system`` parts; the answer is
cut at its edit blocks: its prose as ``text`` parts, each block as an ``edit`` tool part in
its place (``path``, ``search``, ``replace``; the output is the ``Applied edit to`` line
that followed, if any), so a page shows each edit once, as a diff. Nothing of the answer is
lost: the block's own framing (the path line as written, the fences) is in the part's
``aider_edit_block`` (``path_line``, ``fence``, ``closing_fence``, and ``before``/``after``
for blank text between blocks, which is no part of its own), so the answer is, byte for
byte, its text parts and the blocks (:func:`block_text`) in order. A reasoning model's
thinking, which aider writes between ``<thinking-content-…>`` tags, is a ``thinking`` part,
its tags and the blank text around them in ``aider_thinking`` (:func:`thinking_text`). The model named in aider's ``Main model:``/``Models:`` line is the
turns' model. The history has no per-message times: turns carry none, the session the
launch time as written (local time, no zone).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from .common import JSON, MAX_LINE_BYTES, Counts, Problem, Result, SessionBuilder, SourceFile

AGENT = "aider"
DEFAULT_SOURCE = ".aider.chat.history.md"
HEADER = "# aider chat started at "
MODEL_RE = re.compile(r"\A(?:Main model|Models|Model): (?P<model>\S+)")
EDIT_RE = re.compile(
    r"^(?P<path>[^\n`]*?)[ \t]*\n(?:(?P<fence>```[^\n]*)\n)?<<<<<<< SEARCH\n"
    r"(?P<search>(?:.*?\n)??)=======\n(?P<replace>(?:.*?\n)??)>>>>>>> REPLACE$",
    re.MULTILINE | re.DOTALL,
)
CLOSING_RE = re.compile(r"\n(?P<closing>```[ \t]*)(?=\n|\Z)")
APPLIED_RE = re.compile(r"\AApplied edit to (?P<path>.+)\Z")
THINKING_RE = re.compile(
    r"(?P<open><thinking-content-(?P<tag>[0-9a-f]{32})>)(?P<body>.*?)"
    r"(?P<close></thinking-content-(?P=tag)>)",
    re.DOTALL,
)
"""A reasoning model's thinking as aider writes it (its tag is a fixed hash)."""


Unit = SourceFile
"""One history file."""


def block_text(part: dict[str, JSON]) -> str:
    """An ``edit`` part's block as the answer wrote it (blank text around it included)."""
    block = part["aider_edit_block"]
    tool_input = part["input"]
    fence = block.get("fence")
    closing = block.get("closing_fence")
    text: str = (
        block.get("before", "")
        + block["path_line"]
        + "\n"
        + (f"{fence}\n" if fence is not None else "")
        + "<<<<<<< SEARCH\n"
        + tool_input["search"]
        + "=======\n"
        + tool_input["replace"]
        + ">>>>>>> REPLACE"
        + (f"\n{closing}" if closing is not None else "")
        + block.get("after", "")
    )
    return text


def thinking_text(part: dict[str, JSON]) -> str:
    """A ``thinking`` part's text as the answer wrote it: its tags and the blank text
    around it included."""
    framing = part["aider_thinking"]
    text: str = (
        framing.get("before", "")
        + framing["open"]
        + framing["lead"]
        + part["text"]
        + framing["trail"]
        + framing["close"]
        + framing.get("after", "")
    )
    return text


def discover(sources: Iterable[Path], problems: list[Problem]) -> list[Unit]:
    """The history files named, or ``.aider.chat.history.md`` in each folder named."""
    found: dict[str, Unit] = {}
    for source in sources:
        path = source / DEFAULT_SOURCE if source.is_dir() else source
        if not path.is_file():
            problems.append(Problem(str(path), 0, "no such file"))
            continue
        path = path.absolute()
        found.setdefault(str(path), Unit(str(path), path))
    return [found[key] for key in sorted(found)]


def _lines(path: Path, problems: list[Problem]) -> Iterator[tuple[int, str]]:
    """The file's lines without their line ends (``\\r\\n`` too when the first line ends
    so), read one at a time."""
    try:
        handle = open(path, "rb")  # noqa: SIM115  (read-only: a source is never written)
    except OSError as exc:
        problems.append(Problem(str(path), 0, f"cannot read: {exc.strerror or exc}"))
        return
    crlf: bool | None = None
    with handle:
        number = 0
        while data := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(data) > MAX_LINE_BYTES and not data.endswith(b"\n"):
                while data and not data.endswith(b"\n"):
                    data = handle.readline(1 << 20)
                problems.append(
                    Problem(str(path), number, f"line longer than {MAX_LINE_BYTES} bytes, skipped")
                )
                continue
            if crlf is None:
                crlf = data.endswith(b"\r\n")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                text = data.decode("utf-8", "replace")
                problems.append(
                    Problem(
                        str(path), number, f"invalid UTF-8 at byte {exc.start}, replaced by U+FFFD"
                    )
                )
            if number == 1:
                text = text.removeprefix("\ufeff")
            text = text.removesuffix("\n")
            if crlf:
                text = text.removesuffix("\r")
            yield number, text


def _kind(line: str) -> str:
    if line.startswith(HEADER):
        return "header"
    if line.startswith("#### ") or line == "####":
        return "user"
    if line.startswith("> ") or line == ">":
        return "output"
    return "other"


def _unframe(line: str, prefix: str) -> str:
    """A ``#### ``/``> `` line without its prefix and its trailing two-space line break."""
    text = line[len(prefix) + 1 :] if line.startswith(prefix + " ") else line[len(prefix) :]
    return text.removesuffix("  ")


class _Session:
    """One ``# aider chat started at`` block being read."""

    def __init__(self, path: Path, started: str, occurrence: int) -> None:
        source_id = f"{started or 'preamble'}#{occurrence}"
        self.b = SessionBuilder(AGENT, str(path), source_id)
        self.b.first_time = self.b.last_time = started.replace(" ", "T", 1)
        if started:
            self.b.origin["started_at"] = started
        self.model = ""
        self.edits: list[dict[str, JSON]] = []
        """Edit parts still waiting for their ``Applied edit`` line."""

    def turn(self) -> dict[str, JSON]:
        turn = self.b.current or self.b.start_turn("")
        return turn

    def user(self, lines: list[str], first_line: int) -> None:
        text = "\n".join(_unframe(line, "####") for line in lines)
        self.edits = []
        turn = self.b.start_turn("", model=self.model, provider="")
        if text.startswith("/"):
            part = self.b.part("command", "", text=text)
        else:
            part = self.b.part("user", "", text=text)
        part["aider_lines"] = [first_line, first_line + len(lines) - 1]
        del turn  # the turn is current
        self.b.counts.mapped += 1

    def output(self, lines: list[str], first_line: int) -> None:
        texts = [_unframe(line, ">") for line in lines]
        for text in texts:
            model = MODEL_RE.match(text)
            if model:
                self.model = model.group("model")
                self.b.origin.setdefault("model", self.model)
            applied = APPLIED_RE.match(text)
            if applied:
                for part in self.edits:
                    if part["output"] == "" and part["input"]["path"] == applied.group("path"):
                        part["output"] = text
                        break
        self.turn()
        part = self.b.part("system", "", text="\n".join(texts))
        part["aider_lines"] = [first_line, first_line + len(lines) - 1]
        self.b.counts.mapped += 1

    def answer(self, lines: list[str], first_line: int) -> None:
        while lines and not lines[-1].strip():
            lines.pop()
        skipped = 0
        while lines and not lines[0].strip():
            lines.pop(0)
            skipped += 1
        if not lines:
            return
        text = "\n".join(lines)
        turn = self.turn()
        if self.model and not turn["model"]:
            turn["model"] = self.model
        start = first_line + skipped
        answer = [start, start + len(lines) - 1]
        self.b.counts.mapped += 1
        done = 0
        gap = ""
        """Blank text before the next block (no text part of its own)."""
        last: dict[str, JSON] | None = None
        """The framing of the last edit block or thinking (blank text may end the answer)."""

        def line_of(offset: int) -> int:
            return start + text.count("\n", 0, offset)

        def prose(begin: int, end: int) -> None:
            nonlocal gap, last
            piece = text[begin:end]
            thinking = THINKING_RE.search(piece)
            if thinking:
                prose(begin, begin + thinking.start())
                body = thinking.group("body")
                kept = body.strip()
                lead = body[: len(body) - len(body.lstrip())] if kept else body
                trail = body[len(lead) + len(kept) :]
                part = self.b.part("thinking", "", text=kept)
                framing: dict[str, JSON] = {
                    "open": thinking.group("open"),
                    "close": thinking.group("close"),
                    "lead": lead,
                    "trail": trail,
                }
                if gap:
                    framing["before"] = gap
                    gap = ""
                part["aider_thinking"] = framing
                part["aider_lines"] = [
                    line_of(begin + thinking.start()),
                    line_of(begin + thinking.end() - 1),
                ]
                last = framing
                prose(begin + thinking.end(), end)
                return
            if not piece.strip():
                gap = piece
                return
            part = self.b.part("text", "", text=piece)
            first = begin + len(piece) - len(piece.lstrip("\n"))
            part["aider_lines"] = [line_of(first), line_of(begin + len(piece.rstrip("\n")) - 1)]

        for match in EDIT_RE.finditer(text + "\n"):
            if match.end() > len(text):
                break  # only the appended newline matched (cannot happen: the block ends a line)
            prose(done, match.start())
            end = match.end()
            fence = match.group("fence")
            closing = CLOSING_RE.match(text, end) if fence is not None else None
            if closing:
                end = closing.end()
            path_line = match.group(0)[: match.group(0).index("\n")]
            tool = self.b.tool(
                "",
                "edit",
                {
                    "path": match.group("path").strip(),
                    "search": match.group("search") or "",
                    "replace": match.group("replace") or "",
                },
            )
            tool["output"] = ""
            block: dict[str, JSON] = {"answer_lines": answer, "path_line": path_line}
            if gap:
                block["before"] = gap
                gap = ""
            block["fence"] = fence
            block["closing_fence"] = closing.group("closing") if closing else None
            tool["aider_edit_block"] = block
            tool["aider_lines"] = [line_of(match.start()), line_of(end - 1)]
            self.edits.append(tool)
            last = block
            done = end
        prose(done, len(text))
        if gap and last is not None:
            last["after"] = gap

    def document(self) -> dict[str, JSON]:
        return self.b.document()


def _sessions(unit: Unit, problems: list[Problem], counts: Counts) -> Iterator[dict[str, JSON]]:
    seen: dict[str, int] = {}
    session = _Session(unit.path, "", 0)
    kind, start = "", 0
    run: list[str] = []

    def flush() -> None:
        if not run:
            return
        if kind == "user":
            session.user(run, start)
        elif kind == "output":
            session.output(run, start)
        else:
            session.answer(run, start)

    for number, line in _lines(unit.path, problems):
        this = _kind(line)
        if this == "other" and not line.strip() and kind in ("user", "output"):
            flush()
            kind, run, start = "", [], number
            continue
        if this == "header":
            flush()
            kind, run = "", []
            if session.b.turns:
                counts.add(session.b.counts)
                yield session.document()
            started = line[len(HEADER) :].strip()
            seen[started] = seen.get(started, 0) + 1
            session = _Session(unit.path, started, seen[started])
            session.b.counts.mapped += 1
            continue
        if this != kind:
            flush()
            kind, run, start = this, [], number
        run.append(line)
    flush()
    if session.b.turns or session.b.origin.get("started_at"):
        counts.add(session.b.counts)
        yield session.document()


def convert(unit: Unit, problems: list[Problem]) -> Result:
    """The sessions of one history file, produced one at a time."""
    counts = Counts()
    return Result(_sessions(unit, problems, counts), counts)

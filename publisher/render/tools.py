"""Tool-aware rendering: a small registry keyed by tool name, the generic view as fallback.

Each entry reads a tool call's input and says what it is: a shell command line, a patch
or an edit (shown as a unified diff), a file read (path and line range), a delegation
(role and the sub-session it spawned), a fetched URL (and what was asked of it), a new
file, a search of files (pattern, where, which files) or of the web (the query), the
questions asked of the user with their options, a plan, a to-do list. ``parts/tool.html``
shows that *friendly view* above the full input and output, which stay reachable as
written. Any other tool keeps the generic view.

To add a renderer for your own tool without editing the package, ship a theme template
``tools/<name>.html`` (``--theme DIR``): ``parts/tool.html`` includes it in place of the
friendly view; it sees ``p`` (the PartView), ``t`` (the TurnView), ``m`` (macros) and the
``diff``, ``ansi`` and ``pre`` filters. Or register a function in :data:`REGISTRY` from a
plugin module named in the ``polyglav.tools`` entry point group: ``module:function``
where ``function(registry)`` adds entries (loaded once, at the first render).

Outputs are read too, for every tool: a unified diff is shown as one, and ANSI SGR colour
codes become classes (``ansi-fg-1``…), never raw markup; other control characters are
shown as visible escapes (``\\x1b``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from importlib.metadata import entry_points

from ..audit import Delegation
from ..model import JSON, Session, ToolPart
from .text import TERMINAL_CONTROL_RE, has_controls


@dataclass(slots=True, frozen=True)
class Option:
    """One answer a question to the user offers."""

    label: str
    """What the user picks."""
    description: str = ""
    """What it means."""


@dataclass(slots=True, frozen=True)
class Question:
    """One question a tool call asks the user (Claude Code's ``AskUserQuestion``)."""

    question: str
    """The question."""
    header: str = ""
    """Its short title."""
    options: tuple[Option, ...] = ()
    """The answers offered."""
    multiple: bool = False
    """True when several answers may be picked."""


@dataclass(slots=True, frozen=True)
class Todo:
    """One item of a to-do list or plan a tool call writes (``TodoWrite``, ``update_plan``)."""

    text: str
    """What is to be done."""
    status: str = ""
    """``pending``, ``in_progress``, ``completed`` or as written."""


@dataclass(slots=True, frozen=True)
class ToolView:
    """What a tool call is, as its friendly view shows it (every field optional)."""

    kind: str
    """``shell``, ``diff``, ``read``, ``delegate``, ``fetch``, ``write``, ``search`` (file
    contents), ``find`` (file names), ``web_search``, ``ask``, ``plan``, ``todos``,
    ``stdin`` (input sent to a running command), ``task_output`` (a background task's output
    read) or ``skill``."""
    command: str = ""
    """A shell command line."""
    path: str = ""
    """The file it reads or edits."""
    lines: str = ""
    """A line range (``40–45``)."""
    diff: str = ""
    """A unified diff (or ``+``/``-`` lines) of what it changes."""
    content: str = ""
    """A new file's content, a plan's text (Markdown), what is sent to a command, or a
    skill's arguments."""
    url: str = ""
    """A fetched URL."""
    role: str = ""
    """A delegation's role."""
    task: str = ""
    """A delegation's task, or what a fetch asks of the page."""
    target: str = ""
    """What the call acts on: the sub-session a delegation spawned (empty when unknown), the
    running command input is sent to (Codex's process session id), the background task
    whose output is read, the skill used."""
    pattern: str = ""
    """What a search looks for (a regular expression), or a glob of the file names to find."""
    files: str = ""
    """Which files a search of contents looks in (a glob or a type)."""
    query: str = ""
    """A web search's query."""
    questions: tuple[Question, ...] = ()
    """The questions asked of the user (their answers are in the output)."""
    todos: tuple[Todo, ...] = ()
    """A to-do list, in order."""
    timeout: str = ""
    """How long the call waits at most (``120 s``), when it says."""


def shown_text(view: ToolView) -> list[str]:
    """The texts ``tool_view.html`` shows of a friendly view, as the search index holds
    them (a new file's content and the JSON input behind "Input as written" are not shown
    in the view, so not indexed)."""
    texts = [view.command, view.path, view.diff, view.url, view.role, view.task]
    texts += [view.target, view.pattern, view.files, view.query]
    if view.kind in ("plan", "stdin", "skill"):
        texts.append(view.content)
    for q in view.questions:
        texts += [q.header, q.question]
        texts += [t for o in q.options for t in (o.label, o.description)]
    texts += [item.text for item in view.todos]
    return [text for text in texts if text]


Renderer = Callable[[ToolPart], "ToolView | None"]
#: Tool name → what reads its input. A plugin adds entries (module docstring).
REGISTRY: dict[str, Renderer] = {}
_plugins_loaded = False

#: Edits larger than this (characters) are not diffed (the input stays shown as written).
DIFF_LIMIT = 200_000
DELEGATED_RE = re.compile(r"\ADelegated to (\S+)")


def _s(value: JSON) -> str:
    return value if isinstance(value, str) else ""


def _d(part: ToolPart) -> dict[str, JSON]:
    return part.input if isinstance(part.input, dict) else {}


def edit_diff(path: str, old: str, new: str) -> str:
    """A unified diff of ``old`` → ``new`` (empty when too large to diff)."""
    if len(old) + len(new) > DIFF_LIMIT:
        return ""
    # git's a/ and b/ mark a path relative to the repository; an absolute path (Claude Code
    # writes them) is shown as it is, not as ``a//home/…``.
    before, after = (path, path) if path.startswith("/") else (f"a/{path}", f"b/{path}")
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), before, after, lineterm="", n=3
    )
    return "\n".join(lines)


def _shell(part: ToolPart) -> ToolView | None:
    d = _d(part)
    value = d["command"] if "command" in d else d.get("cmd", part.input)  # (Codex: cmd)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        words = [str(v) for v in value]
        if len(words) == 2 and words[0] == "apply_patch":
            return ToolView("diff", diff=words[1])  # Codex's patch tool run as a command
        if len(words) == 3 and words[0] in ("bash", "sh", "zsh") and words[1] in ("-lc", "-c"):
            return _script(words[2])
        return ToolView("shell", command=" ".join(_quote(w) for w in words))
    command = _s(value)
    return _script(command) if command else None


APPLY_PATCH_RE = re.compile(
    r"\Aapply_patch <<-?\s*['\"]?(\w{1,64})['\"]?\n"
    r"(?P<patch>\*\*\* Begin Patch\n.*?\*\*\* End Patch)\n?\1\n?\Z",
    re.DOTALL,
)
"""A shell script that only feeds a patch to ``apply_patch`` through a here-document
(``apply_patch <<'PATCH'`` … ``PATCH``, as Codex wrote patches before its patch tool)."""


def _script(command: str) -> ToolView:
    """A command line, or the diff view when it only applies a patch (:data:`APPLY_PATCH_RE`)."""
    if command.startswith("apply_patch") and "*** Begin Patch" in command[:8192]:
        match = APPLY_PATCH_RE.match(command)
        if match:
            return ToolView("diff", diff=match.group("patch"))
    return ToolView("shell", command=command)


def _quote(word: str) -> str:
    return word if re.fullmatch(r"[\w@%+=:,./-]+", word) else "'" + word.replace("'", "'\\''") + "'"


def _read(part: ToolPart) -> ToolView | None:
    d = _d(part)
    path = _s(d.get("path")) or _s(d.get("file_path"))
    if not path:
        return None
    start = d.get("start_line", d.get("offset"))
    end = d.get("end_line")
    if end is None and isinstance(start, int) and isinstance(d.get("limit"), int):
        end = start + int(d["limit"]) - 1
    lines = ""
    if isinstance(start, int) and isinstance(end, int):
        lines = f"lines {start}–{end}"
    elif isinstance(start, int):
        lines = f"from line {start}"
    return ToolView("read", path=path, lines=lines)


def _patch(part: ToolPart) -> ToolView | None:
    d = _d(part)
    path = _s(d.get("path")) or _s(d.get("file_path"))
    patch = _s(d.get("patch")) or _s(d.get("diff"))
    if patch:
        return ToolView("diff", path=path, diff=patch)
    content = _s(d.get("content"))
    if content:
        return ToolView("write", path=path, content=content)
    return None


def _apply_patch(part: ToolPart) -> ToolView | None:
    text = part.input if isinstance(part.input, str) else _s(_d(part).get("input"))
    text = text or _s(_d(part).get("patch"))
    if not text:
        cmd = _d(part).get("command")
        if isinstance(cmd, list) and len(cmd) == 2 and cmd[0] == "apply_patch":
            text = _s(cmd[1])
    return ToolView("diff", diff=text) if text else None


def _edit(part: ToolPart) -> ToolView | None:
    d = _d(part)
    path = _s(d.get("file_path")) or _s(d.get("path"))
    edits = d.get("edits")
    pairs: list[tuple[str, str]] = []
    if isinstance(edits, list):
        for e in edits:
            if isinstance(e, dict):
                pairs.append((_s(e.get("old_string")), _s(e.get("new_string"))))
    else:
        old = _s(d.get("old_string")) or _s(d.get("search"))
        new = _s(d.get("new_string")) or _s(d.get("replace"))
        pairs.append((old, new))
    diff = "\n".join(edit_diff(path, old, new) for old, new in pairs if old or new)
    return ToolView("diff", path=path, diff=diff) if diff else None


def _write(part: ToolPart) -> ToolView | None:
    d = _d(part)
    path = _s(d.get("file_path")) or _s(d.get("path"))
    content = _s(d.get("content"))
    return ToolView("write", path=path, content=content) if path else None


def _delegate(part: ToolPart) -> ToolView | None:
    d = _d(part)
    role = delegate_role(part)
    task = (
        _s(d.get("task"))
        or _s(d.get("description"))
        or _s(d.get("prompt"))
        or _s(d.get("message"))  # (Codex's spawn_agent)
    )
    target = delegate_target(part)
    return ToolView("delegate", role=role, task=task, target=target)


@dataclass(slots=True, frozen=True)
class Change:
    """A file a tool call changed (an edit, a write, a patch), as the overview lists it."""

    path: str
    """The file, as the call names it."""
    action: str
    """``edited``, ``written``, ``patched``, ``added``, ``deleted`` or ``moved``."""
    position: int
    """0-based position of the call's turn in the session."""
    number: int
    """1-based number of the call in its turn."""


_PATCH_FILE = re.compile(
    r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.M
)
_PATCH_ACTIONS = {"Add": "added", "Update": "patched", "Delete": "deleted"}


def changes_of(session: Session) -> list[Change]:
    """The files the session's tool calls changed, in file order: edits, writes and patches
    whose call returned without an error (a failed or unfinished call changed nothing that
    the log can vouch for). A patch names each file it adds, updates, deletes or moves."""
    found = []
    for position, turn in enumerate(session.turns):
        for number, part in enumerate(turn.parts, start=1):
            if not isinstance(part, ToolPart) or part.output is None or part.is_error:
                continue
            view = friendly(part)
            if view is None or view.kind not in ("diff", "write"):
                continue
            if view.path:
                action = (
                    "written" if view.kind == "write" else "edited" if _is_edit(part) else "patched"
                )
                found.append(Change(view.path, action, position, number))
                continue
            for match in _PATCH_FILE.finditer(view.diff[:DIFF_LIMIT]):
                if match.group(3):
                    found.append(Change(match.group(3), "moved", position, number))
                else:
                    action = _PATCH_ACTIONS[match.group(1)]
                    found.append(Change(match.group(2), action, position, number))
    return found


def _is_edit(part: ToolPart) -> bool:
    """True for a call read by the edit view (old text → new text)."""
    return REGISTRY.get(part.name) is _edit


def delegate_role(part: ToolPart) -> str:
    """The role a delegate call asked for (Polyglav's ``role``, Claude Code's
    ``subagent_type``, Codex's ``agent_type``)."""
    d = _d(part)
    return _s(d.get("role")) or _s(d.get("subagent_type")) or _s(d.get("agent_type"))


def delegation_of(part: ToolPart) -> Delegation | None:
    """The call as :mod:`publisher.audit`'s delegation rule reads it, when it is a delegate
    call (a tool read as a delegation, or any call naming the sub-session it spawned)."""
    named = delegate_target(part)
    if not named and REGISTRY.get(part.name) is not _delegate:
        return None
    return Delegation(named, delegate_role(part), part.timestamp)


def delegate_target(part: ToolPart) -> str:
    """The sub-session a delegate call spawned: the importer's ``sub_session`` field, or
    the name Polyglav's delegate reports (``Delegated to sub_… (role …)``)."""
    named = part.extra.get("sub_session")
    if isinstance(named, str) and named:
        return named
    match = DELEGATED_RE.match(part.output or "")
    return match.group(1) if match else ""


def _fetch(part: ToolPart) -> ToolView | None:
    d = _d(part)
    url = _s(d.get("url"))
    return ToolView("fetch", url=url, task=_s(d.get("prompt"))) if url else None


def _stdin(part: ToolPart) -> ToolView | None:
    """Codex's ``write_stdin``: what it sends to a command still running (none: it waits
    for more of its output)."""
    d = _d(part)
    process = d.get("session_id")
    if isinstance(process, bool) or not isinstance(process, (int, str)) or process == "":
        return None
    return ToolView("stdin", target=str(process), content=_s(d.get("chars")))


def _task_output(part: ToolPart) -> ToolView | None:
    """Claude Code's ``TaskOutput`` (``task_id``, ``block``, ``timeout`` in ms) and the older
    ``BashOutput`` (``bash_id``): the output of a command left running in the background."""
    d = _d(part)
    task = _s(d.get("task_id")) or _s(d.get("bash_id")) or _s(d.get("shell_id"))
    if not task:
        return None
    wait = d.get("timeout")
    timeout = ""
    if (
        d.get("block") is True
        and isinstance(wait, int)
        and not isinstance(wait, bool)
        and wait >= 0
    ):
        whole, ms = divmod(wait, 1000)  # (integers: any size the loader lets through)
        timeout = f"{whole}.{ms:03d}".rstrip("0").rstrip(".") + " s"
    return ToolView("task_output", target=task, timeout=timeout)


def _skill(part: ToolPart) -> ToolView | None:
    d = _d(part)
    skill = _s(d.get("skill")) or _s(d.get("command"))
    return ToolView("skill", target=skill, content=_s(d.get("args"))) if skill else None


def _grep(part: ToolPart) -> ToolView | None:
    d = _d(part)
    pattern = _s(d.get("pattern"))
    files = _s(d.get("glob")) or _s(d.get("type")) or _s(d.get("include"))
    return (
        ToolView("search", pattern=pattern, path=_s(d.get("path")), files=files)
        if pattern
        else None
    )


def _glob(part: ToolPart) -> ToolView | None:
    d = _d(part)
    pattern = _s(d.get("pattern"))
    return ToolView("find", pattern=pattern, path=_s(d.get("path"))) if pattern else None


def _web_search(part: ToolPart) -> ToolView | None:
    """A web search; Codex's ``web_search_call`` also opens a page it found (``open_page``)
    and looks for a pattern in one (``find_in_page``)."""
    d = _d(part)
    action = _s(d.get("type"))
    if action == "open_page":
        url = _s(d.get("url"))
        return ToolView("fetch", url=url) if url else None
    if action == "find_in_page":
        pattern, url = _s(d.get("pattern")), _s(d.get("url"))
        return ToolView("search", pattern=pattern, path=url) if pattern else None
    query = _s(d.get("query"))
    queries = d.get("queries")
    if not query and isinstance(queries, list):
        query = " · ".join(q for q in queries if isinstance(q, str) and q)
    return ToolView("web_search", query=query) if query else None


def _ask(part: ToolPart) -> ToolView | None:
    asked = _d(part).get("questions")
    if not isinstance(asked, list):
        return None
    questions = []
    for q in asked:
        if not isinstance(q, dict) or not _s(q.get("question")):
            return None
        offered = q.get("options")
        options = tuple(
            Option(_s(o.get("label")), _s(o.get("description")))
            for o in (offered if isinstance(offered, list) else [])
            if isinstance(o, dict) and _s(o.get("label"))
        )
        multiple = q.get("multiSelect") is True
        questions.append(Question(_s(q.get("question")), _s(q.get("header")), options, multiple))
    return ToolView("ask", questions=tuple(questions)) if questions else None


def _plan(part: ToolPart) -> ToolView | None:
    plan = _s(_d(part).get("plan"))
    return ToolView("plan", content=plan) if plan.strip() else None


def _todos(part: ToolPart) -> ToolView | None:
    d = _d(part)
    items = d.get("todos")
    if items is None:
        items = d.get("plan")  # Codex's update_plan: [{"step", "status"}]
    if not isinstance(items, list) or not items:
        return None
    todos = []
    for item in items:
        if not isinstance(item, dict):
            return None
        text = _s(item.get("content")) or _s(item.get("step"))
        todos.append(Todo(text, _s(item.get("status"))))
    return ToolView("todos", todos=tuple(todos), task=_s(d.get("explanation")))


REGISTRY.update(
    {
        "run_command": _shell,
        "Bash": _shell,
        "shell": _shell,
        "shell_command": _shell,
        "exec_command": _shell,
        "local_shell": _shell,
        "file_read": _read,
        "Read": _read,
        "view_image": _read,
        "file_write": _patch,
        "Edit": _edit,
        "MultiEdit": _edit,
        "edit": _edit,
        "Write": _write,
        "apply_patch": _apply_patch,
        "delegate": _delegate,
        "Task": _delegate,
        "Agent": _delegate,
        "spawn_agent": _delegate,
        "web_fetch": _fetch,
        "WebFetch": _fetch,
        "fetch_page": _fetch,
        "open": _fetch,
        "Grep": _grep,
        "grep": _grep,
        "Glob": _glob,
        "glob": _glob,
        "web_search": _web_search,
        "WebSearch": _web_search,
        "AskUserQuestion": _ask,
        "request_user_input": _ask,
        "ExitPlanMode": _plan,
        "TodoWrite": _todos,
        "update_plan": _todos,
        "write_stdin": _stdin,
        "TaskOutput": _task_output,
        "BashOutput": _task_output,
        "Skill": _skill,
    }
)


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in sorted(entry_points(group="polyglav.tools"), key=lambda e: e.name):
        ep.load()(REGISTRY)


def friendly(part: ToolPart) -> ToolView | None:
    """The friendly view of a tool call, or None (the generic view)."""
    _load_plugins()
    reader = REGISTRY.get(part.name)
    if reader is None:
        return None
    try:
        return reader(part)
    except (TypeError, ValueError, AttributeError):
        return None


# --- Outputs: diffs, ANSI colours, control characters -------------------------------------

_HUNK_AT = re.compile(r"@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
#: Only the first this many characters of an output are looked at for a diff.
DIFF_SCAN_CHARS = 200_000


def looks_like_diff(text: str) -> bool:
    """True when ``text`` holds a unified diff (a line starting with a hunk header) or an
    apply_patch block, in its first :data:`DIFF_SCAN_CHARS` characters.

    Only the line starts that begin ``@@ -`` are tried (``str.find``, C speed): a multiline
    ``^`` regex over every output was 5 % of a build of tool-output-heavy sessions."""
    head = text[:DIFF_SCAN_CHARS]
    if "*** Begin Patch" in head:
        return True
    if head.startswith("@@ -") and _HUNK_AT.match(head):
        return True
    pos = head.find("\n@@ -")
    while pos >= 0:
        if _HUNK_AT.match(head, pos + 1):
            return True
        pos = head.find("\n@@ -", pos + 1)
    return False


def _control(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in "\r":
        return char
    if "\ud800" <= char <= "\udfff":
        shown = f"\\u{ord(char):04x}"
    else:
        shown = char.encode("unicode_escape").decode("ascii")
    return f'<span class="ctl">{shown}</span>'


def visible_controls(html: str) -> str:
    """Escaped HTML with its raw control characters made visible escapes."""
    return TERMINAL_CONTROL_RE.sub(_control, html) if has_controls(html) else html


def diff_html(text: str) -> str:
    """A diff as escaped lines, each in a span: ``d-add``, ``d-del``, ``d-hunk``, ``d-file``.

    The text is escaped once and its control characters made visible once (escaping
    touches no line start a class depends on; the escapes hold no line break)."""
    out = []
    for line in escape(text, quote=False).split("\n"):
        if line.startswith(("+++", "---", "diff --git", "*** ", "index ")):
            cls = "d-file"
        elif line.startswith("@@"):
            cls = "d-hunk"
        elif line.startswith("+"):
            cls = "d-add"
        elif line.startswith("-"):
            cls = "d-del"
        else:
            out.append(line)
            continue
        out.append(f'<span class="{cls}">{line}</span>')
    return visible_controls("\n".join(out))


_SGR_RE = re.compile("\x1b\\[([0-9;]*)m")


#: A line as Claude Code's Read (``cat -n`` with an arrow) gives it: ``     12→text``.
_NUMBERED_LINE = re.compile(r" {0,10}(\d{1,9})\u2192")
#: How many of an output's first lines are looked at to tell it is numbered.
NUMBERED_PROBE = 20


def looks_numbered(text: str) -> bool:
    """True when ``text`` is a file read with its line numbers (``     1→…``): every one of
    its first :data:`NUMBERED_PROBE` lines (blank last lines aside) starts with one."""
    lines = text[:8192].split("\n", NUMBERED_PROBE)[:NUMBERED_PROBE]
    while lines and not lines[-1].strip():
        lines.pop()
    return bool(lines) and all(_NUMBERED_LINE.match(line) for line in lines)


def numbered_html(text: str) -> str:
    """A numbered file read as lines beside a gutter of their numbers (the numbers outside
    the text, so a wrapped line stays right of them on a phone and a copy takes only the
    file's text); a line without a number (the output's own note) is a line of its own."""
    out = []
    widest = 1
    for line in text.split("\n"):
        match = _NUMBERED_LINE.match(line)
        if match is None:
            out.append(f'<span class="nl"><span>{escape(line, quote=False)}</span></span>')
            continue
        widest = max(widest, len(match.group(1)))
        number, content = match.group(1), escape(line[match.end() :], quote=False)
        out.append(f'<span class="nl" data-n="{number}"><span>{content}</span></span>')
    body = visible_controls("".join(out))
    return f'<span class="numbered nd-{min(widest, 9)}">{body}</span>'


def has_ansi(text: str) -> bool:
    return "\x1b[" in text and _SGR_RE.search(text) is not None


def ansi_html(text: str) -> str:
    """Text with ANSI SGR colour codes as ``<span class="ansi-…">``; other escapes visible.

    The text is escaped once, before its SGR codes are read (escaping turns only ``&``,
    ``<`` and ``>`` into entities, none of which a code holds, makes or breaks), and its
    other control characters are made visible once, at the end (the spans hold none)."""
    text = escape(text, quote=False)
    out: list[str] = []
    classes: list[str] = []
    pos = 0
    open_span = False
    for match in _SGR_RE.finditer(text):
        chunk = text[pos : match.start()]
        if chunk:
            out.append(chunk)
        pos = match.end()
        codes = [c for c in match.group(1).split(";") if c] or ["0"]
        for code in codes:
            if not code.isdigit():
                continue
            n = int(code)
            if n == 0:
                classes = []
            elif n == 1:
                classes = [c for c in classes if c != "ansi-bold"] + ["ansi-bold"]
            elif 30 <= n <= 37 or 90 <= n <= 97:
                classes = [c for c in classes if not c.startswith("ansi-fg")]
                classes.append(f"ansi-fg-{n - 30 if n < 90 else n - 82}")
            elif n == 39:
                classes = [c for c in classes if not c.startswith("ansi-fg")]
            elif 40 <= n <= 47:
                classes = [c for c in classes if not c.startswith("ansi-bg")]
                classes.append(f"ansi-bg-{n - 40}")
            elif n == 49:
                classes = [c for c in classes if not c.startswith("ansi-bg")]
        if open_span:
            out.append("</span>")
            open_span = False
        if classes:
            out.append(f'<span class="{" ".join(classes)}">')
            open_span = True
    out.append(text[pos:])
    if open_span:
        out.append("</span>")
    return visible_controls("".join(out))


def fetch_url_allowed(url: str) -> bool:
    """True for an absolute http(s) URL without whitespace or control characters: one a
    page may link (``rel="nofollow noopener noreferrer"``)."""
    return re.fullmatch(r"https?://[^\s\x00-\x1f\x7f]+", url) is not None


def spawn_id(target: str) -> str:
    """The element id a delegate call carries for the sub-session it spawned (its name),
    so the sub-session's page links back to the call; empty when a name cannot be an id."""
    return f"spawn-{target}" if target and not any(c.isspace() for c in target) else ""

"""Load session files: the one module that knows the JSON file format.

``read_session`` turns one file into a :class:`~publisher.model.Session` or raises
:class:`SessionLoadError` with a one-line reason. It never writes, renames or locks the
file: a session folder is read-only to the publisher.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import msgspec

from .model import (
    JSON,
    USAGE_FIELDS,
    CommandPart,
    ErrorEntry,
    Image,
    ImagePart,
    Part,
    Permission,
    Session,
    TextualPart,
    ToolPart,
    Turn,
    UnknownPart,
    Usage,
)

#: Longest integer literal accepted (Python refuses > 4300 digits by default).
MAX_INT_DIGITS = 20_000
#: Deepest nesting accepted inside a tool input or an unknown field.
MAX_VALUE_DEPTH = 200

TEXTUAL_TYPES = ("user", "text", "thinking", "system")

MAX_TOKENS = 1_000_000_000
"""The largest token count a usage entry may give for one request (the largest context
windows are a few million tokens): a larger one is not counted."""

# Integer literals up to MAX_INT_DIGITS must parse (a 5,000-digit number is legal JSON).
if 0 < sys.get_int_max_str_digits() < MAX_INT_DIGITS:
    sys.set_int_max_str_digits(MAX_INT_DIGITS)


class SessionLoadError(Exception):
    """A session file that does not load; ``reason`` is one line meant for the user."""

    def __init__(self, file_name: str, reason: str) -> None:
        super().__init__(f"{file_name}: {reason}")
        self.file_name = file_name
        self.reason = reason


class _FormatError(Exception):
    """Internal: a structural problem at a JSON path."""


def _parse_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise _FormatError(f"integer literal of {len(text)} digits (limit {MAX_INT_DIGITS})")
    return int(text)


def _decode_text(data: bytes) -> str:
    """The text of a session file's bytes (BOM dropped), raising ``_FormatError``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _FormatError(f"invalid UTF-8 at byte {exc.start}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def _loads(text: str) -> JSON:
    """The JSON value of a session file's text, raising ``_FormatError``."""
    if not text or text.isspace():  # not text.strip(): a copy of a 100 MB text
        raise _FormatError("empty file (being written?)")
    try:
        return json.loads(text, parse_int=_parse_int)
    except RecursionError:
        raise _FormatError("JSON nested too deep") from None
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            raise _FormatError(
                f"trailing data after the JSON document (line {exc.lineno}, column {exc.colno})"
            ) from None
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            raise _FormatError(
                f"truncated JSON: {exc.msg} at end of file (line {exc.lineno}); being written?"
            ) from None
        raise _FormatError(
            f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None


def _type_name(value: JSON) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _check_depth(value: JSON, where: str) -> None:
    """Refuse values nested deeper than MAX_VALUE_DEPTH (iteratively, no recursion)."""
    stack: list[tuple[JSON, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_VALUE_DEPTH:
            raise _FormatError(f"{where}: JSON nested deeper than {MAX_VALUE_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


class _Fields:
    """Typed access to one JSON object, remembering which keys were consumed."""

    __slots__ = ("obj", "path", "used")

    def __init__(self, obj: JSON, path: str) -> None:
        if not isinstance(obj, dict):
            raise _FormatError(f"{path}: expected an object, got {_type_name(obj)}")
        self.obj: dict[str, JSON] = obj
        self.path = path
        self.used: set[str] = set()

    def text(self, key: str, default: str = "") -> str:
        """A string field; null or missing give the default; numbers are shown as text."""
        self.used.add(key)
        value = self.obj.get(key)
        if value is None:
            return default
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float)):
            return _number_text(value)
        raise _FormatError(f"{self.path}.{key}: expected a string, got {_type_name(value)}")

    def raw(self, key: str) -> JSON:
        self.used.add(key)
        value = self.obj.get(key)
        _check_depth(value, f"{self.path}.{key}")
        return value

    def array(self, key: str) -> list[JSON]:
        self.used.add(key)
        value = self.obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise _FormatError(f"{self.path}.{key}: expected an array, got {_type_name(value)}")
        return value

    def extra(self) -> dict[str, JSON]:
        result = {k: v for k, v in self.obj.items() if k not in self.used}
        for key, value in result.items():
            _check_depth(value, f"{self.path}.{key}")
        return result


def _number_text(value: int | float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return json.dumps(value)


def _parse_image(f: _Fields) -> Image:
    """The ``media_type`` and ``data`` of an image (a part, or an entry of a tool part's
    ``images``); its other fields stay on the object ``f`` reads."""
    return Image(media_type=f.text("media_type"), data=f.text("data"))


def _parse_images(values: list[JSON], path: str) -> list[Image]:
    images = []
    for i, value in enumerate(values):
        f = _Fields(value, f"{path}[{i}]")
        image = _parse_image(f)
        image.extra = f.extra()
        images.append(image)
    return images


def _parse_part(obj: JSON, path: str) -> Part:
    f = _Fields(obj, path)
    ptype = f.text("type")
    timestamp = f.text("timestamp")
    part: Part
    if ptype in TEXTUAL_TYPES:
        part = TextualPart(type=ptype, timestamp=timestamp, text=f.text("text"))
    elif ptype == "tool":
        output_raw = f.obj.get("output")
        output = None if output_raw is None else f.text("output")
        is_error = f.obj.get("is_error", False)
        f.used.add("is_error")
        if not isinstance(is_error, bool):
            if is_error is None:
                is_error = False
            else:
                raise _FormatError(
                    f"{path}.is_error: expected a boolean, got {_type_name(is_error)}"
                )
        interrupted = f.obj.get("interrupted", False)
        f.used.add("interrupted")
        if not isinstance(interrupted, bool):
            if interrupted is not None:
                raise _FormatError(
                    f"{path}.interrupted: expected a boolean, got {_type_name(interrupted)}"
                )
            interrupted = False
        part = ToolPart(
            type=ptype,
            timestamp=timestamp,
            name=f.text("name"),
            input=f.raw("input"),
            output=output,
            is_error=is_error,
            analysis=f.text("analysis"),
            images=_parse_images(f.array("images"), f"{path}.images"),
            interrupted=interrupted,
            ended_at=f.text("ended_at"),
        )
    elif ptype == "image":
        part = ImagePart(type=ptype, timestamp=timestamp, image=_parse_image(f))
    elif ptype == "command":
        summary_raw = f.obj.get("summary")
        summary = None if summary_raw is None else f.text("summary")
        cf = f.raw("compact_from")
        if cf is not None and (isinstance(cf, bool) or not isinstance(cf, int)):
            raise _FormatError(f"{path}.compact_from: expected an integer, got {_type_name(cf)}")
        part = CommandPart(
            type=ptype, timestamp=timestamp, text=f.text("text"), summary=summary, compact_from=cf
        )
    else:
        # Unknown type: keep everything, including "type", so it can be shown as written.
        part = UnknownPart(type=ptype, timestamp=timestamp)
        f.used.discard("type")
        f.used.discard("timestamp")
    part.extra = f.extra()
    return part


def _parse_turn(obj: JSON, path: str, position: int) -> Turn:
    f = _Fields(obj, path)
    index_raw = f.obj.get("index")
    f.used.add("index")
    if index_raw is None:
        index = position
    elif isinstance(index_raw, int) and not isinstance(index_raw, bool):
        index = index_raw
    else:
        raise _FormatError(f"{path}.index: expected an integer, got {_type_name(index_raw)}")
    f.used.add("usage")
    written = f.obj.get("usage")
    usage = _parse_usage(written)
    try:
        _check_depth(written, f"{path}.usage")
    except _FormatError:  # not kept (as written it could not be shown), never fatal
        usage, written = [Usage(problem=f"usage nested deeper than {MAX_VALUE_DEPTH} levels")], None
    turn = Turn(
        index=index,
        status=f.text("status"),
        started_at=f.text("started_at"),
        ended_at=f.text("ended_at"),
        model=f.text("model"),
        provider=f.text("provider"),
        mode=f.text("mode"),
        reasoning=f.text("reasoning"),
        parts=[_parse_part(p, f"{path}.parts[{i}]") for i, p in enumerate(f.array("parts"))],
        usage=usage,
        usage_written=written,
    )
    turn.extra = f.extra()
    return turn


def _shown(value: JSON) -> str:
    """A hostile value as a problem names it: short, on one line."""
    try:
        text = json.dumps(value, ensure_ascii=True, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = _type_name(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _parse_usage(written: JSON) -> list[Usage]:
    """A turn's ``usage`` entries. Never raises: an entry that is not an object, or whose
    counts are not whole numbers from 0 to :data:`MAX_TOKENS` (a string, a float, a
    negative or huge number, NaN), or whose parts exceed their whole, is kept with its
    :attr:`~.model.Usage.problem` and counts as zero (its page still shows)."""
    if written is None:
        return []
    if not isinstance(written, list):
        return [Usage(problem=f"usage is {_type_name(written)}, not an array")]
    entries = []
    for value in written:
        if not isinstance(value, dict):
            entries.append(Usage(problem=f"an entry is {_type_name(value)}, not an object"))
            continue
        model = value.get("model", "")
        if not isinstance(model, str):
            entries.append(Usage(problem=f"model is {_type_name(model)}, not a string"))
            continue
        counts = [value.get(key, 0) for key in USAGE_FIELDS]
        problem = ""
        if not all(type(count) is int and 0 <= count <= MAX_TOKENS for count in counts):
            key, count = next(
                (k, c)
                for k, c in zip(USAGE_FIELDS, counts, strict=True)
                if type(c) is not int or not 0 <= c <= MAX_TOKENS
            )
            problem = f"{key} is {_shown(count)}, not a whole number of tokens"
        if not problem:
            _, output, _, cache_write, cache_write_1h, reasoning = counts
            if cache_write_1h > cache_write:
                problem = "cache_write_1h is more than cache_write"
            elif reasoning > output:
                problem = "reasoning is more than output"
        if problem:
            entries.append(Usage(model=model, problem=problem))
        else:
            i, o, cr, cw, cw1h, r = counts
            entries.append(Usage(model, i, o, cr, cw, cw1h, r))
    return entries


def _parse_error(obj: JSON, path: str) -> ErrorEntry:
    f = _Fields(obj, path)
    code = f.obj.get("code", 0)
    f.used.add("code")
    if code is None:
        code = 0
    if not isinstance(code, (int, float, str)) or isinstance(code, bool):
        raise _FormatError(f"{path}.code: expected a number, got {_type_name(code)}")
    entry = ErrorEntry(code=code, message=f.text("message"), timestamp=f.text("timestamp"))
    entry.extra = f.extra()
    return entry


def _parse_permission(obj: JSON, path: str) -> Permission:
    f = _Fields(obj, path)
    entry = Permission(
        tool=f.text("tool"),
        action=f.text("action"),
        decision=f.text("decision"),
        path=f.text("path"),
        timestamp=f.text("timestamp"),
    )
    entry.extra = f.extra()
    return entry


def _str_list(values: list[JSON], path: str) -> list[str]:
    out = []
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise _FormatError(f"{path}[{i}]: expected a string, got {_type_name(value)}")
        out.append(value)
    return out


def session_from_json(doc: JSON, file_name: str) -> Session:
    """Build a Session from a decoded document, raising ``_FormatError``."""
    if not isinstance(doc, dict):
        raise _FormatError(f"expected a JSON object at the top level, got {_type_name(doc)}")
    if "turns" not in doc and "messages" in doc:
        raise _FormatError("legacy flat-messages format (written before the turn format)")
    missing = [key for key in ("session_name", "session_id") if key not in doc]
    if missing:
        if "name" in doc or "id" in doc:
            raise _FormatError(
                "written before the session_name/session_id fields (has name/id instead)"
            )
        raise _FormatError("not a session file: no " + " or ".join(missing) + " field")
    if "turns" not in doc:
        raise _FormatError("not a session file: no turns field")
    f = _Fields(doc, "$")
    name = f.text("session_name")
    session = Session(
        session_name=name,
        session_id=f.text("session_id"),
        created_at=f.text("created_at"),
        updated_at=f.text("updated_at"),
        parent_id=f.text("parent_id"),
        role=f.text("role"),
        version=f.text("version"),
        sub_sessions=_str_list(f.array("sub_sessions"), "$.sub_sessions"),
        turns=[_parse_turn(t, f"$.turns[{i}]", i + 1) for i, t in enumerate(f.array("turns"))],
        errors=[_parse_error(e, f"$.errors[{i}]") for i, e in enumerate(f.array("errors"))],
        permissions=[
            _parse_permission(p, f"$.permissions[{i}]")
            for i, p in enumerate(f.array("permissions"))
        ],
        file_name=file_name,
        title=f.text("title"),
    )
    session.extra = f.extra()
    return session


def decode_session_bytes(data: bytes, file_name: str) -> str:
    """The text of a session file's bytes, for :func:`parse_session_text` (the path of a
    file :func:`parse_session_bytes` does not read fast)."""
    try:
        return _decode_text(data)
    except _FormatError as exc:
        raise SessionLoadError(file_name, str(exc)) from None


def parse_session_bytes(data: bytes, file_name: str) -> Session:
    """Parse the bytes of a session file named ``file_name``.

    The bytes are read by msgspec's JSON decoder as they are (no text made of them first:
    several times faster than decoding them and running :func:`json.loads`, and the file
    is not also held as text). A file it refuses, for any reason (not JSON, not UTF-8, a
    lone surrogate escape, ``NaN``, a number out of its range, nesting too deep, a byte
    order mark), is parsed again by the standard library's path
    (:func:`decode_session_bytes`, :func:`parse_session_text`): the values of a file both
    read are the same (tested), and the reason a file does not load is that path's."""
    try:
        value = fast_values(data)
    except (msgspec.DecodeError, RecursionError):
        return parse_session_text(decode_session_bytes(data, file_name), file_name)
    try:
        return session_from_json(value, file_name)
    except _FormatError as exc:
        raise SessionLoadError(file_name, str(exc)) from None
    except RecursionError:
        raise SessionLoadError(file_name, "JSON nested too deep") from None


def fast_values(data: bytes) -> JSON:
    """The JSON values of a session file's bytes (a byte order mark skipped) as msgspec's
    decoder reads them; raises ``msgspec.DecodeError`` (or ``RecursionError``) for a file
    it refuses (:func:`parse_session_bytes` then takes the standard library's path)."""
    body = memoryview(data)[3:] if data.startswith(_BOM) else data
    value: JSON = _DECODE(body)
    return value


_BOM = b"\xef\xbb\xbf"
_DECODE = msgspec.json.Decoder().decode
"""msgspec's JSON decoder (untyped: plain dicts, lists, strings and numbers), a stateless
configured reader like a compiled pattern."""


def parse_session_text(text: str, file_name: str) -> Session:
    """Parse the text of a session file named ``file_name``."""
    try:
        return session_from_json(_loads(text), file_name)
    except _FormatError as exc:
        raise SessionLoadError(file_name, str(exc)) from None
    except RecursionError:
        raise SessionLoadError(file_name, "JSON nested too deep") from None


_SESSION_FILE = re.compile(r"[^.].*\.json", re.DOTALL).fullmatch
"""The one rule for which entries of a sessions folder are session files: ``*.json``, not
hidden (a leading dot: editors' and agents' temporary files). A pattern, so that a folder of
100,000 names is filtered at C speed (:func:`session_file_names`)."""


def is_session_file(name: str) -> bool:
    """Whether ``name`` is a session file's (:data:`_SESSION_FILE`)."""
    return _SESSION_FILE(name) is not None


def session_file_names(folder: Path | str) -> list[str]:
    """The session files of ``folder`` (:func:`is_session_file`), sorted by name; an empty
    list when the folder cannot be listed."""
    try:
        return sorted(filter(_SESSION_FILE, os.listdir(folder)))  # names only: no DirEntry
    except OSError:
        return []


def check_inside(path: Path, folder: Path) -> None:
    """Raise SessionLoadError when ``path`` is not a regular file inside ``folder``."""
    try:
        st = path.lstat()
    except OSError as exc:
        raise SessionLoadError(path.name, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise SessionLoadError(path.name, "broken or looping symlink") from None
        if not target.is_relative_to(folder.resolve()):
            raise SessionLoadError(
                path.name, "symlink leading out of the sessions folder (not read)"
            )
        st = target.stat()
    if not stat.S_ISREG(st.st_mode):
        raise SessionLoadError(path.name, "not a regular file")


def read_session(path: Path, folder: Path | None = None) -> Session:
    """Read and parse one session file; ``folder`` confines symlinks to the sessions folder."""
    return parse_session_bytes(read_session_bytes(path, folder), path.name)


USAGE_HEAD = 1 << 16
"""How much of a file :func:`may_record_usage` reads."""


def may_record_usage(path: Path) -> bool:
    """Whether the file's first :data:`USAGE_HEAD` bytes name a ``usage`` field (a turn's
    usage entries: an imported session's first turn records them): a hint for performance
    only (a build imports the price table once before starting its workers when its files
    may need it), never a reading of the file."""
    try:
        with open(path, "rb") as handle:
            return b'"usage"' in handle.read(USAGE_HEAD)
    except OSError:
        return False


def read_session_bytes(path: Path, folder: Path | None = None) -> bytes:
    """The bytes of one session file; ``folder`` confines symlinks to the sessions folder."""
    check_inside(path, folder if folder is not None else path.parent)
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise SessionLoadError(path.name, f"cannot read: {exc.strerror or exc}") from None


def file_stamp(path: Path | str) -> tuple[int, int]:
    """(size, mtime_ns) of a file, following symlinks; (0, 0) when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_size, st.st_mtime_ns)

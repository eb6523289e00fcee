"""Images a session holds (a prompt's pasted screenshot, a tool result's image): what they
are, whether a page may show them, and the file each is published as.

An image's bytes and type are untrusted: the declared ``media_type`` may lie, the base64
may be broken, an SVG may carry script. Only raster images whose bytes start as their
declared type says (PNG, JPEG, GIF, WebP) and whose size is within the cap are published;
any other is a placeholder saying why, never a file, never inline markup. SVG is never
published (an ``<img>`` of an SVG cannot run script, but a reader who opens the file
itself can: not worth it for screenshots, which are raster).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from .model import Image, ImagePart, Part, Session, ToolPart

#: Largest decoded image published (bytes): a bigger one is a placeholder saying its size.
MAX_BYTES = 5 * 1024 * 1024
#: Largest decoded image a single-file HTML export inlines (as a ``data:`` URI, a third
#: bigger than the image): past it, a placeholder, so one screenshot never makes the file
#: megabytes of text.
MAX_INLINE_BYTES = 512 * 1024

#: Media type → (the bytes it must start with, the file extension).
RASTER: dict[str, tuple[tuple[bytes, ...], str]] = {
    "image/png": ((b"\x89PNG\r\n\x1a\n",), "png"),
    "image/jpeg": ((b"\xff\xd8\xff",), "jpg"),
    "image/gif": ((b"GIF87a", b"GIF89a"), "gif"),
    "image/webp": ((b"RIFF",), "webp"),
}

NAMES = {"png": "PNG", "jpg": "JPEG", "gif": "GIF", "webp": "WebP"}
#: What the file of a published image is named with: ``img-<digest>.png``, in the session's
#: folder beside its pages (so a file deleted there by hand is seen as any page is:
#: :func:`publisher.site.staleness.folder_intact`).
PREFIX = "img-"

_BASE64_RE = re.compile(rb"[A-Za-z0-9+/]*={0,2}")
#: Characters of the digest a file is named by (128 bits: collisions are not a concern).
NAME_DIGITS = 32


@dataclass(slots=True, frozen=True)
class ImageFacts:
    """What an image is, as pages and the export say it."""

    media_type: str
    """The declared media type, as written."""
    size: int
    """Its decoded size in bytes (0 when the base64 does not decode)."""
    sha256: str
    """SHA-256 of its decoded bytes (of its base64 text when that does not decode)."""
    file_name: str | None
    """The file it is published as (``img-<digest>.png``), None when it is not published."""
    problem: str
    """Why it is not shown (one line), "" when it is."""
    checked_type: str = ""
    """The media type its bytes were checked against (``image/png``), "" when not shown."""

    @property
    def label(self) -> str:
        """``image/png, 1,234 bytes, sha256 3f2a…``: what the export and a placeholder say."""
        kind = self.media_type or "no media type"
        return f"{kind}, {self.size:,} bytes, sha256 {self.sha256}"


def _decode(data: str) -> bytes | None:
    """The bytes of strict base64 (line breaks allowed), None when it is not."""
    try:
        raw = data.encode("ascii")
    except UnicodeEncodeError:
        return None
    raw = raw.replace(b"\r", b"").replace(b"\n", b"")
    if len(raw) % 4 or not _BASE64_RE.fullmatch(raw):
        return None
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None


def examine(image: Image, cap: int = MAX_BYTES) -> tuple[ImageFacts, bytes | None]:
    """The facts of ``image`` and, when it may be shown (a raster image within ``cap``
    whose bytes match its declared type), its bytes; else None and the reason."""
    declared = image.media_type.strip().lower()
    data = _decode(image.data)
    if data is None:
        digest = hashlib.sha256(image.data.encode("utf-8", "surrogatepass")).hexdigest()
        return ImageFacts(image.media_type, 0, digest, None, "its data is not valid base64"), None
    digest = hashlib.sha256(data).hexdigest()

    def refused(problem: str) -> tuple[ImageFacts, None]:
        return ImageFacts(image.media_type, len(data), digest, None, problem), None

    if "svg" in declared or data.lstrip()[:5].lower() in (b"<svg ", b"<?xml"):
        return refused("an SVG image (it may hold script)")
    known = RASTER.get(declared)
    if known is None:
        return refused("not a type pages show (PNG, JPEG, GIF, WebP)")
    magics, extension = known
    if not data.startswith(magics) or (extension == "webp" and data[8:12] != b"WEBP"):
        return refused(f"its bytes are not a {NAMES[extension]} image, as its type says")
    if len(data) > cap:
        return refused(f"larger than the {cap // 1024:,} KB a page shows")
    name = f"{PREFIX}{digest[:NAME_DIGITS]}.{extension}"
    return ImageFacts(image.media_type, len(data), digest, name, "", declared), data


def facts(image: Image) -> ImageFacts:
    """:func:`examine`'s facts alone."""
    return examine(image)[0]


def data_uri(media_type: str, data: bytes) -> str:
    """A ``data:`` URI of checked image bytes (for the single-file export)."""
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def of_part(part: Part) -> list[Image]:
    """The images a part holds: an image part's one, a tool call's result's."""
    if isinstance(part, ImagePart):
        return [part.image]
    return part.images if isinstance(part, ToolPart) else []


def published(session: Session) -> Iterator[tuple[str, bytes]]:
    """(file name, bytes) of every image of ``session`` a page shows (each once, in the
    order they first appear): the site writes them beside the session's pages."""
    seen: set[str] = set()
    for turn in session.turns:
        for part in turn.parts:
            for image in of_part(part):
                facts, data = examine(image)
                if data is not None and facts.file_name and facts.file_name not in seen:
                    seen.add(facts.file_name)
                    yield facts.file_name, data

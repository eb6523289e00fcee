"""Images a session holds: which a page shows, as what, and that hostile ones (a lying
type, SVG with script, broken base64, huge) never reach a page as anything but a
placeholder (``publisher/images.py``, ``parts/image.html``, the tool part's images)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher import images
from publisher.model import Image
from tests.helpers import build, page_of, part, session_doc, turn

pytestmark = pytest.mark.unit

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC"
)
MAGIC = {
    "png": b"\x89PNG\r\n\x1a\n",
    "jpg": b"\xff\xd8\xff",
    "gif": b"GIF8",
    "webp": b"RIFF",
}


@settings(max_examples=300, deadline=None)
@given(
    media_type=st.one_of(
        st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"]),
        st.text(max_size=30),
    ),
    head=st.sampled_from([b"", PNG[:8], b"\xff\xd8\xff", b"GIF89a", b"RIFF\0\0\0\0WEBP", b"<svg "]),
    body=st.binary(max_size=64),
    broken=st.booleans(),
)
def test_any_image_is_shown_only_when_its_bytes_are_its_raster_type(
    media_type: str, head: bytes, body: bytes, broken: bool
) -> None:
    data = base64.b64encode(head + body).decode()
    if broken:
        data = data[:-1] + "*"
    facts, raw = images.examine(Image(media_type, data))
    if raw is None:
        assert facts.file_name is None and facts.problem
        return
    assert not broken and raw == head + body and not facts.problem
    assert facts.checked_type in images.RASTER and "svg" not in facts.checked_type
    extension = facts.file_name.rsplit(".", 1)[1] if facts.file_name else ""
    assert raw.startswith(MAGIC[extension])
    assert facts.file_name == f"img-{hashlib.sha256(raw).hexdigest()[:32]}.{extension}"
    uri = images.data_uri(facts.checked_type, raw)
    assert uri.startswith(f"data:{facts.checked_type};base64,") and '"' not in uri


def test_the_caps_turn_an_image_into_a_placeholder() -> None:
    big = Image("image/png", base64.b64encode(PNG + b"\0" * 2048).decode())
    assert images.examine(big, cap=1024)[0].problem == "larger than the 1 KB a page shows"
    assert images.examine(big)[1] is not None


@pytest.mark.site
def test_hostile_media_types_and_data_never_reach_a_page_as_markup(
    tmp_path: Path,
) -> None:
    hostile = '"><script>alert(1)</script>'
    svg = base64.b64encode(b"<svg onload=alert(2)><script>alert(3)</script></svg>").decode()
    doc = session_doc(
        turns=[
            turn(
                1,
                part("user", "look"),
                {"type": "image", "media_type": hostile, "data": base64.b64encode(PNG).decode()},
                {"type": "image", "media_type": "image/png", "data": hostile},
                {"type": "image", "media_type": "image/svg+xml", "data": svg},
                {
                    "type": "image",
                    "media_type": "image/png",
                    "data": base64.b64encode(PNG).decode(),
                    "alt": hostile,
                },
                part(
                    "tool",
                    name="Read",
                    input={"file_path": "x.png"},
                    output="",
                    images=[{"media_type": "image/png", "data": base64.b64encode(PNG).decode()}],
                ),
            )
        ]
    )
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / f"{doc['session_name']}.json").write_text(json.dumps(doc), encoding="utf-8")
    site = tmp_path / "site"
    assert not build(sessions, site).failures
    page = page_of(site, doc["session_name"]).read_text(encoding="utf-8")
    assert "<script>alert" not in page and "onload=" not in page
    assert page.count("Image not shown:") == 3
    shown = sorted(page_of(site, doc["session_name"]).parent.glob("img-*"))
    assert [p.read_bytes() for p in shown] == [PNG]  # one file for the same image twice
    assert page.count(f'src="{shown[0].name}"') == 2

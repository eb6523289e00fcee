"""Which sub-session a delegate call spawned: the call's own word, else role and time.

The format does not promise that a delegate call's output names its sub-session (Polyglav's
``Delegated to <name>`` is a wording of our samples). A sub-session names its parent, its
role and its creation time: an unnamed call takes the earliest unclaimed sub-session of
its role created at or after it (``publisher.audit``, "Delegate call → sub-session"), and
the pages, the links back and the single-file export all read that one rule.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from publisher.audit import Delegation, Spawn, match_delegations
from publisher.site import urls
from tests.helpers import (
    Writer,
    build,
    fresh_digest,
    page_of,
    part,
    polyglav,
    session_doc,
    tree_digest,
    turn,
)

PARENT = "ses_20260901_090000_pppppp"
REVIEW_1 = "sub_20260901_090500_rrrrr1"
SCAN = "sub_20260901_090600_ssssss"
REVIEW_2 = "sub_20260901_091500_rrrrr2"


def _call(role: str, stamp: str, output: str = "Result:\nlooks fine") -> dict[str, Any]:
    return part(
        "tool",
        name="delegate",
        input={"role": role, "task": f"{role} pass"},
        output=output,
        timestamp=stamp,
    )


def _archive(write_session: Writer, *, declared: bool = True) -> None:
    """A parent whose three delegate calls name no session (reviewer, security, reviewer),
    and its three sub-sessions, written in an order that is not the calls' order."""
    write_session(
        session_doc(
            PARENT,
            created_at="2026-09-01T09:00:00+00:00",
            sub_sessions=[REVIEW_2, SCAN, REVIEW_1] if declared else [],
            turns=[
                turn(
                    1,
                    part("user", "review, then scan"),
                    _call("reviewer", "2026-09-01T09:04:00+00:00"),
                    _call("security", "2026-09-01T09:05:30+00:00"),
                    started_at="2026-09-01T09:04:00+00:00",
                    ended_at="2026-09-01T09:07:00+00:00",
                ),
                turn(
                    2,
                    part("user", "review again"),
                    _call("reviewer", "2026-09-01T09:15:00+00:00"),
                    started_at="2026-09-01T09:15:00+00:00",
                    ended_at="2026-09-01T09:16:00+00:00",
                ),
            ],
        )
    )
    for name, role, created in (
        (REVIEW_2, "reviewer", "2026-09-01T09:15:01+00:00"),
        (SCAN, "security", "2026-09-01T09:06:00+00:00"),
        (REVIEW_1, "reviewer", "2026-09-01T09:05:00+00:00"),
    ):
        write_session(
            session_doc(
                name,
                parent_id=PARENT,
                role=role,
                created_at=created,
                turns=[turn(1, part("user", f"{role} task"), part("text", "done"))],
            )
        )


@pytest.mark.unit
def test_unnamed_calls_take_their_role_in_time_order() -> None:
    calls = [
        Delegation("", "reviewer", "2026-09-01T09:04:00+00:00"),
        Delegation("", "security", "2026-09-01T09:05:30+00:00"),
        Delegation("", "reviewer", "2026-09-01T09:15:00+00:00"),
        Delegation("", "reviewer", "2026-09-01T09:20:00+00:00"),  # spawned nothing here
    ]
    children = [
        Spawn(REVIEW_2, "reviewer", "2026-09-01T09:15:01+00:00"),
        Spawn(SCAN, "security", "2026-09-01T09:06:00+00:00"),
        Spawn(REVIEW_1, "reviewer", "2026-09-01T09:05:00+00:00"),
    ]
    assert match_delegations(calls, children) == [REVIEW_1, SCAN, REVIEW_2, ""]


@pytest.mark.unit
def test_a_named_call_keeps_its_session_and_time_binds() -> None:
    children = [
        Spawn("sub_a", "reviewer", "2026-09-01T09:05:00+00:00"),
        Spawn("sub_b", "reviewer", "2026-09-01T09:06:00+00:00"),
    ]
    # The second call names sub_a: the first (unnamed) call cannot take it, even earlier.
    calls = [
        Delegation("", "reviewer", "2026-09-01T09:00:00+00:00"),
        Delegation("sub_a", "reviewer", "2026-09-01T09:10:00+00:00"),
    ]
    assert match_delegations(calls, children) == ["sub_b", "sub_a"]
    # A sub-session created before the call was not spawned by it; another role never.
    late = [Delegation("", "reviewer", "2026-09-01T09:05:30+00:00")]
    assert match_delegations(late, children) == ["sub_b"]
    assert match_delegations([Delegation("", "security", "")], children) == [""]
    # A time that does not read binds nothing: the earliest of the role is taken.
    assert match_delegations([Delegation("", "reviewer", "soon")], children) == ["sub_a"]


_STAMP = st.integers(0, 50).map(lambda m: f"2026-09-01T09:{m:02d}:00+00:00")


@pytest.mark.unit
@given(
    calls=st.lists(
        st.builds(
            Delegation,
            st.sampled_from(["", "", "", "c1", "c4"]),
            st.sampled_from(["a", "b", ""]),
            _STAMP | st.just("?"),
        ),
        max_size=8,
    ),
    children=st.lists(
        st.builds(
            Spawn,
            st.sampled_from([f"c{i}" for i in range(8)]),
            st.sampled_from(["a", "b", ""]),
            _STAMP | st.just(""),
        ),
        max_size=8,
        unique_by=lambda c: c.name,
    ),
)
def test_matching_properties(calls: list[Delegation], children: list[Spawn]) -> None:
    from publisher.audit import utc_time

    out = match_delegations(calls, children)
    assert len(out) == len(calls)
    by_name = {c.name: c for c in children}
    named = {c.named for c in calls if c.named}
    unnamed = [t for call, t in zip(calls, out, strict=True) if not call.named and t]
    assert len(unnamed) == len(set(unnamed)), "a sub-session is taken once"
    for call, target in zip(calls, out, strict=True):
        if call.named:
            assert target == call.named
            continue
        if not target:
            continue
        child = by_name[target]
        assert target not in named and child.role == call.role
        born, after = utc_time(child.created_at), utc_time(call.timestamp)
        assert born is None or after is None or born >= after


@pytest.mark.site
@pytest.mark.parametrize("declared", [True, False], ids=["declared", "by-parent-id"])
def test_site_links_calls_and_back(tmp_path: Path, write_session: Writer, declared: bool) -> None:
    _archive(write_session, declared=declared)
    out = tmp_path / "site"
    build(tmp_path / "proj" / ".polyglav" / "sessions", out)
    parent = page_of(out, PARENT).read_text(encoding="utf-8")
    for call, child in (("turn-1.2", REVIEW_1), ("turn-1.3", SCAN), ("turn-2.2", REVIEW_2)):
        # The call's card names and links the sub-session it spawned, and carries its id.
        card = parent[parent.index(f'id="{call}"') :]
        card = card[: card.index("</article>")]
        assert f'id="spawn-{child}"' in card, (call, child)
        assert f'href="../{urls.slug(child)}/index.html"><code>{child}</code></a>' in card
        # The sub-session links back to that call.
        page = page_of(out, child).read_text(encoding="utf-8")
        back = re.search(r'class="spawn-link" href="([^"]+)"', page)
        assert back is not None and back.group(1) == f"../{urls.slug(PARENT)}/index.html#{call}"


@pytest.mark.site
def test_single_export_links_calls_and_back(tmp_path: Path, write_session: Writer) -> None:
    _archive(write_session)
    out = tmp_path / "tree.html"
    result = polyglav(
        "export", PARENT, "--project", str(tmp_path / "proj"), "-f", "html", "-o", str(out)
    )
    assert result.exit_code == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    for call, child in (("turn-1.2", REVIEW_1), ("turn-1.3", SCAN), ("turn-2.2", REVIEW_2)):
        section = f"s-{child.rsplit('_', 1)[-1]}"
        card = text[text.index(f'id="{call}"') :]
        card = card[: card.index("</article>")]
        assert f'<a href="#{section}"><code>{child}</code></a>' in card, (call, child)
        sub = text[text.index(f'id="{section}"') :]
        back = re.search(r'class="spawn-link" href="([^"]+)"', sub)
        assert back is not None and back.group(1) == f"#{call}", child


ROOT_S = "ses_20260902_100000_rootaa"
SCOUT = "sub_20260902_100500_scouta"  # called second, created first
FIXER = "sub_20260902_100600_fixera"  # called first
DEEP = "sub_20260902_100700_deepaa"  # below FIXER


def _named_call(target: str, role: str, stamp: str) -> dict[str, Any]:
    return part(
        "tool",
        name="delegate",
        input={"role": role, "task": f"{role}: do the {role} part\nsecond line"},
        output=f"Delegated to {target} (role {role}). Result:\ndone",
        timestamp=stamp,
    )


def _failing(stamp: str, command: str = "make test") -> dict[str, Any]:
    return part(
        "tool", name="run_command", input={"command": command}, output="exit 2", is_error=True,
        timestamp=stamp,
    )  # fmt: skip


def _family(write_session: Writer, deep_failures: int = 1) -> None:
    """A root that calls a fixer, then a scout; the fixer edits a file and fails a call, its
    own sub-agent fails ``deep_failures`` calls; the scout does nothing wrong."""
    t = "2026-09-02T10:{:02d}:00+00:00"
    write_session(
        session_doc(
            ROOT_S,
            sub_sessions=[SCOUT, FIXER],
            turns=[
                turn(
                    1, part("user", "fix it"), _named_call(FIXER, "fixer", t.format(5)),
                    _named_call(SCOUT, "scout", t.format(6)), started_at=t.format(0),
                    ended_at=t.format(9),
                )
            ],
        )
    )  # fmt: skip
    write_session(
        session_doc(
            FIXER, parent_id=ROOT_S, role="fixer", created_at=t.format(6), sub_sessions=[DEEP],
            turns=[
                turn(
                    1, part("user", "fix"),
                    part("tool", name="Edit", output="ok", timestamp=t.format(6),
                         input={"file_path": "app/a.py", "old_string": "x", "new_string": "y"}),
                    _failing(t.format(6)), _named_call(DEEP, "tester", t.format(7)),
                    started_at=t.format(6), ended_at=t.format(8),
                )
            ],
        )
    )  # fmt: skip
    write_session(
        session_doc(
            SCOUT, parent_id=ROOT_S, role="scout", created_at=t.format(5),
            turns=[turn(1, part("user", "look"), part("text", "fine"))],
        )
    )  # fmt: skip
    write_session(
        session_doc(
            DEEP, parent_id=FIXER, role="tester", created_at=t.format(7),
            turns=[
                turn(1, part("user", "test"), *(_failing(t.format(7), f"t{i}") for i in range(deep_failures)),
                     started_at=t.format(7), ended_at=t.format(8))
            ],
        )
    )  # fmt: skip


@pytest.mark.site
def test_a_caller_shows_what_its_sub_agents_did(tmp_path: Path, write_session: Writer) -> None:
    _family(write_session)
    out = tmp_path / "site"
    build(tmp_path / "proj" / ".polyglav" / "sessions", out)
    page = page_of(out, ROOT_S).read_text(encoding="utf-8")
    # Each delegate call says what its sub-agent did, with those below it.
    fixer_card = page[page.index('id="turn-1.2"') :]
    fixer_card = fixer_card[: fixer_card.index("</article>")]
    assert 'The sub-agent: <span class="outcome-line">4 calls: ' in fixer_card
    assert '<span class="oc-tool-error">2 failed calls</span>' in fixer_card
    assert "1 file changed" in fixer_card and "(2 sessions)" in fixer_card
    scout_card = page[page.index('id="turn-1.3"') :]
    scout_card = scout_card[: scout_card.index("</article>")]
    assert 'The sub-agent: <span class="outcome-line">0 calls, nothing failed' in scout_card
    # The overview lists them in the order they were called, with role and task.
    listed = page[page.index('<ol class="sub-agent-list">') :]
    listed = listed[: listed.index("</ol>")]
    assert listed.index(FIXER) < listed.index(SCOUT)
    assert '<span class="sa-role">fixer</span>' in listed
    assert '<span class="sa-task">fixer: do the fixer part</span>' in listed
    assert "second line" not in listed
    # Its own figures and the total with every session below it.
    assert 'With its sub-agents: <span class="outcome-line">6 calls: ' in page
    assert 'the sub-agents alone: <span class="outcome-line">4 calls: ' in page


@pytest.mark.site
def test_a_change_below_renders_the_callers_again(tmp_path: Path, write_session: Writer) -> None:
    """An append to a sub-sub-session changes what its callers' pages show: an incremental
    build renders them again, and equals a fresh build of the same archive."""
    _family(write_session)
    sessions = tmp_path / "proj" / ".polyglav" / "sessions"
    out = tmp_path / "site"
    build(sessions, out)
    _family(write_session, deep_failures=3)
    report = build(sessions, out)
    page = page_of(out, ROOT_S).read_text(encoding="utf-8")
    assert (
        'With its sub-agents: <span class="outcome-line">8 calls: ' in page
        and "4 failed calls" in page
    )
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")
    assert report is not None


@pytest.mark.site
def test_the_single_file_export_shows_what_its_sub_agents_did(
    tmp_path: Path, write_session: Writer
) -> None:
    _family(write_session)
    out = tmp_path / "tree.html"
    result = polyglav(
        "export", ROOT_S, "--project", str(tmp_path / "proj"), "-f", "html", "-o", str(out)
    )
    assert result.exit_code == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    main = text[: text.index('id="s-')]  # the root's own section
    assert 'With its sub-agents: <span class="outcome-line">6 calls: ' in main
    card = main[main.index('id="turn-1.2"') :]
    card = card[: card.index("</article>")]
    assert 'The sub-agent: <span class="outcome-line">4 calls: ' in card
    listed = main[main.index('<ol class="sub-agent-list">') :]
    listed = listed[: listed.index("</ol>")]
    assert listed.index(FIXER) < listed.index(SCOUT)
    assert f'<a href="#s-{FIXER.rsplit("_", 1)[-1]}"><code>{FIXER}</code></a>' in listed
    # The fixer's own section says what its sub-agent did.
    fixer = text[text.index(f'id="s-{FIXER.rsplit("_", 1)[-1]}"') :]
    assert 'With its sub-agents: <span class="outcome-line">4 calls: ' in fixer


@pytest.mark.site
def test_a_sub_agents_report_is_markdown_folded_after_its_first_lines(
    tmp_path: Path, write_session: Writer
) -> None:
    report = "## Findings\n\nThe **cache** is stale.\n\n" + "".join(
        f"- item {i} <script>x</script>\n" for i in range(30)
    )
    short = "All *good*."
    write_session(
        session_doc(
            PARENT,
            turns=[
                turn(
                    1, part("user", "look"),
                    part("tool", name="Task", input={"subagent_type": "Explore", "prompt": "p"},
                         output=report),
                    part("tool", name="Task", input={"subagent_type": "Explore", "prompt": "q"},
                         output=short),
                )
            ],
        )
    )  # fmt: skip
    out = tmp_path / "site"
    build(tmp_path / "proj" / ".polyglav" / "sessions", out)
    page = page_of(out, PARENT).read_text(encoding="utf-8")
    long_card = page[page.index('id="turn-1.2"') : page.index('id="turn-1.3"')]
    head = long_card[long_card.index('<div class="report md">') :]
    head = head[: head.index("</div>")]
    assert "<h4>Findings</h4>" in head and "<strong>cache</strong>" in head
    assert "item 0" not in head  # folded after the first paragraphs
    assert (
        '<details class="report-rest"><summary>The whole report (34 lines)</summary>' in long_card
    )
    assert "item 29 &lt;script&gt;" in long_card and "<script>x" not in long_card
    short_card = page[page.index('id="turn-1.3"') :]
    short_card = short_card[: short_card.index("</article>")]
    assert '<div class="report md"><p>All <em>good</em>.</p>' in short_card
    assert "report-rest" not in short_card

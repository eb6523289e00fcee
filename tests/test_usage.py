"""Issue 29: what a run cost and where its time went.

Every figure is checked against the source logs by another route than the importers' and
``publisher.usage``'s: the real Claude Code and Codex logs of ``tests/data/import`` (origins
in its README) are read here line by line, and their sums compared with what the pages,
``polyglav sessions --format json``, the summary and the JUnit report say. The cost of each
request is compared with ``genai_prices.calc_price`` itself.
"""

from __future__ import annotations

import itertools
import json
import math
import pickle
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from publisher.audit import Audit
from publisher.loader import MAX_TOKENS, session_from_json
from publisher.model import Session, ToolPart
from publisher.render import view
from publisher.render.markdown import export_markdown
from publisher.render.places import turn_times
from publisher.site.single import export_html
from publisher.usage import (
    PriceFileError,
    Prices,
    Tokens,
    load_price_file,
    priced_entries,
    session_spend,
    turn_spend,
)
from tests.helpers import (
    ROOT,
    age,
    build,
    fresh_digest,
    page_of,
    part,
    polyglav,
    python_env,
    session_doc,
    tree_digest,
    turn,
)
from tests.import_helpers import FIXTURES, loaded, run_import, sessions_dir

CODEX = FIXTURES / "codex"
CLAUDE_UNITS = {
    # fixture folder → the logs of each source session in it (a session's log first)
    "claude_code": ["4d5611e5-241a-462a-8d15-5122611a9569", "258c7280-ae70-4798-800f-63464d01a85d"],
    "claude_code_flat": ["4c2ddfdc-b619-4525-8d03-1950fb1b0257"],
    "claude_code_titles": ["1af7fc5e-8455-4414-9ccd-011d40f70b2a"],
    "claude_code_spotter": ["ae4a77f8-aedd-4bc1-888f-c94edc91af04"],
    "claude_code_replay": ["5d0c9e4a-1b2f-4c3d-8e7f-9a0b1c2d3e4f"],
}


# --- the independent routes --------------------------------------------------------------


def _jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def claude_logs(folder: Path, session: str) -> list[Path]:
    """A Claude Code session's log and its sub-agents' (both layouts)."""
    logs = [folder / f"{session}.jsonl"]
    logs += sorted((folder / session).rglob("*.jsonl")) if (folder / session).is_dir() else []
    for beside in sorted(folder.glob("agent-*.jsonl")):
        if any(r.get("sessionId") == session for r in _jsonl(beside)[:20]):
            logs.append(beside)
    return logs


def claude_tokens(logs: list[Path]) -> Tokens:
    """What the logs' messages spent: each message (``message.id``) once, with the largest
    of each count its lines give (a line may hold the usage as the stream began)."""
    largest: dict[str, dict[str, int]] = defaultdict(dict)
    keys = {
        "input": "input_tokens",
        "output": "output_tokens",
        "cache_read": "cache_read_input_tokens",
        "cache_write": "cache_creation_input_tokens",
    }
    for log in logs:
        for record in _jsonl(log):
            message = record.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
            if not isinstance(usage, dict):
                continue
            ident = message.get("id") or record.get("requestId") or id(record)
            for name, source in keys.items():
                value = usage.get(source, 0)
                largest[ident][name] = max(largest[ident].get(name, 0), value)
    total = Tokens()
    for counts in largest.values():
        total = total.plus(Tokens(**counts))
    return total


def codex_totals(path: Path, lines: slice = slice(None)) -> list[tuple[int, int, int, int]]:
    """The running totals a rollout's ``token_count`` events give (input, cached, output,
    reasoning), in order, of its ``lines``."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines()[lines]:
        if '"token_count"' not in line:
            continue
        info = json.loads(line).get("payload", {}).get("info")
        total = info.get("total_token_usage") if isinstance(info, dict) else None
        if isinstance(total, dict):
            keys = (
                "input_tokens",
                "cached_input_tokens",
                "output_tokens",
                "reasoning_output_tokens",
            )
            found.append(tuple(total.get(k, 0) for k in keys))
    return found  # type: ignore[return-value]


def tokens_of(session: Session) -> Tokens | None:
    return session_spend(session, Prices()).tokens


# --- Claude Code -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def claude_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("claude")
    for folder in CLAUDE_UNITS:
        code, err = run_import("claude-code", FIXTURES / folder, project=project)
        assert code == 0, err
    return project


@pytest.mark.site
@pytest.mark.parametrize(
    ("folder", "session"), [(f, s) for f, ss in CLAUDE_UNITS.items() for s in ss]
)
def test_claude_code_tokens_equal_the_logs_messages(
    claude_project: Path, folder: str, session: str
) -> None:
    """A session and its sub-sessions spent what their logs' messages did, each message
    counted once (real logs write one line per content block, each with the usage)."""
    logs = claude_logs(FIXTURES / folder, session)
    imported = [
        s
        for s in loaded(claude_project).values()
        if s.extra["imported_from"]["session_id"].split("/")[0] == session
    ]
    assert imported
    total = Tokens()
    for s in imported:
        total = total.plus(tokens_of(s) or Tokens())
    assert total == claude_tokens(logs)


@pytest.mark.site
def test_a_log_repeating_message_ids_counts_each_message_once(claude_project: Path) -> None:
    """Marot/spotter's 2.1.39 log writes 7 lines with usage for 5 messages (two of them
    with a larger output count on their later line): 5 usage entries, the larger counts."""
    log = FIXTURES / "claude_code" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    lines = [
        r for r in _jsonl(log) if isinstance(r.get("message"), dict) and "usage" in r["message"]
    ]
    ids = {r["message"]["id"] for r in lines}
    assert (len(lines), len(ids)) == (7, 5)
    (main,) = [
        s
        for s in loaded(claude_project).values()
        if s.extra["imported_from"]["session_id"] == log.stem
    ]
    entries = [u for t in main.turns for u in t.usage]
    assert len(entries) == 5
    summed_by_line = sum(r["message"]["usage"]["output_tokens"] for r in lines)
    spent = tokens_of(main)
    assert spent is not None and spent.output < summed_by_line  # lines not summed
    assert spent.output == claude_tokens([log]).output


# --- Codex -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def codex_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("codex")
    code, err = run_import("codex", CODEX, project=project)
    assert code == 0, err
    return project


@pytest.mark.site
@pytest.mark.parametrize("rollout", sorted(p.name for p in CODEX.glob("rollout-*.jsonl")))
def test_codex_per_turn_deltas_add_up_to_the_last_total(codex_project: Path, rollout: str) -> None:
    """Each turn's usage is a difference of the rollout's running totals; they add up to
    its last total (a forked rollout's, less the total of the history it copied)."""
    path = CODEX / rollout
    (session,) = [
        s for s in loaded(codex_project).values() if s.extra["imported_from"]["path"] == str(path)
    ]
    inherited = session.extra.get("codex_inherited", [])
    copied_to = max((block["lines"][1] for block in inherited), default=0)
    own = codex_totals(path, slice(copied_to, None))
    spent = tokens_of(session)
    if not own:
        assert spent is None  # no usage recorded: nothing, not zero
        return
    # A rollout's own totals only grow; the history it copied ends with the total it was
    # copied at, from which they continue, unless Codex started counting again (the fork
    # of Codex 0.36 here does: its first total is below the copy's last).
    assert all(
        a <= b
        for first, second in itertools.pairwise(own)
        for a, b in zip(first, second, strict=False)
    )
    copied = codex_totals(path, slice(0, copied_to))
    base = copied[-1] if copied else (0, 0, 0, 0)
    if any(n < b for n, b in zip(own[0], base, strict=True)):
        base = (0, 0, 0, 0)
    inputs, cached, output, reasoning = (n - b for n, b in zip(own[-1], base, strict=True))
    assert spent == Tokens(inputs - cached, output, cached, 0, reasoning)
    per_turn = [turn_spend(session, t, Prices()).tokens for t in session.turns]
    summed = Tokens()
    for tokens in per_turn:
        summed = summed.plus(tokens or Tokens())
    assert summed == spent


# --- prices ------------------------------------------------------------------------------


@pytest.mark.site
def test_each_request_costs_what_genai_prices_says(
    claude_project: Path, codex_project: Path
) -> None:
    """The rates probed from genai-prices give, for every real request of the fixtures, the
    cost its own ``calc_price`` gives."""
    from genai_prices import Usage, calc_price

    prices = Prices()
    checked = 0
    for project in (claude_project, codex_project):
        for session in loaded(project).values():
            for turn_ in session.turns:
                for item, entry in zip(
                    priced_entries(session, turn_, prices), turn_.usage, strict=True
                ):
                    if item.picousd is None:
                        continue
                    when = datetime.fromisoformat(item.day).replace(tzinfo=UTC)
                    theirs = calc_price(
                        Usage(
                            input_tokens=entry.input + entry.cache_read + entry.cache_write,
                            cache_read_tokens=entry.cache_read,
                            cache_write_tokens=entry.cache_write,
                            cache_write_1h_tokens=entry.cache_write_1h,
                            output_tokens=entry.output,
                            output_reasoning_tokens=entry.reasoning,
                        ),
                        item.model,
                        provider_id=turn_.provider or None,
                        genai_request_timestamp=when,
                    )
                    assert item.picousd == int(theirs.total_price * 10**12)
                    checked += 1
    assert checked > 50


@pytest.mark.unit
def test_a_tier_applies_by_the_requests_size() -> None:
    """Claude Sonnet 4.5 costs more above 200,000 input tokens of one request: two requests
    of 150,000 cost the base price, one of 300,000 the tier's (never the turn's sum)."""
    prices = Prices()
    rates = prices.rates("anthropic", "claude-sonnet-4-5-20250929", "2025-12-01")
    assert rates is not None
    doc = session_doc(
        turns=[
            turn(
                1,
                part("user", "go"),
                model="claude-sonnet-4-5-20250929",
                provider="anthropic",
                started_at="2025-12-01T10:00:00+00:00",
                ended_at="2025-12-01T10:01:00+00:00",
                usage=[{"input": 150_000, "output": 0}, {"input": 150_000, "output": 0}],
            ),
            turn(
                2,
                part("user", "go"),
                model="claude-sonnet-4-5-20250929",
                provider="anthropic",
                started_at="2025-12-01T10:02:00+00:00",
                ended_at="2025-12-01T10:03:00+00:00",
                usage=[{"input": 300_000, "output": 0}],
            ),
        ]
    )
    s = session_from_json(doc, "x.json")
    small, large = (turn_spend(s, t, prices).picousd for t in s.turns)
    assert small == 300_000 * 3 * 10**6  # $3 per million
    assert large == 300_000 * 6 * 10**6  # $6 per million above 200,000


UNKNOWN = "no-such-model-x"


def usage_session(model: str = UNKNOWN, **extra: Any) -> dict[str, Any]:
    return session_doc(
        turns=[
            turn(
                1,
                part("user", "go"),
                part("text", "done"),
                model=model,
                provider="",
                usage=[{"model": model, "input": 1000, "output": 200, "cache_read": 5000}],
                **extra,
            )
        ]
    )


@pytest.mark.site
def test_an_unknown_model_is_unpriced_everywhere(tmp_path: Path) -> None:
    """A model the table has no price for: the page says "unpriced", the JSON's cost is
    null, and ``--max-cost`` fails (the cost is unknown), never a guess."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    doc = usage_session()
    (folder / f"{doc['session_name']}.json").write_text(json.dumps(doc), encoding="utf-8")
    build(folder, tmp_path / "site")
    page = page_of(tmp_path / "site", doc["session_name"]).read_text()
    assert "<dt>Cost</dt><dd>unpriced" in page
    assert f"model {UNKNOWN} unpriced" in page
    result = polyglav("sessions", "--format", "json", "--project", str(folder))
    (item,) = json.loads(result.stdout)
    assert item["cost_usd"] is None and item["unpriced_models"] == [UNKNOWN]
    assert item["tokens"] == {
        "input": 1000,
        "output": 200,
        "cache_read": 5000,
        "cache_write": 0,
        "reasoning": 0,
    }
    result = polyglav("check", doc["session_name"], "--project", str(folder), "--max-cost", "100")
    assert result.exit_code == 1
    assert f"cost unknown: 6,200 tokens of model {UNKNOWN} unpriced" in result.stderr


# --- hostile usage -------------------------------------------------------------------------

good = st.integers(min_value=0, max_value=MAX_TOKENS)
hostile = (
    st.integers(max_value=-1)
    | st.integers(min_value=MAX_TOKENS + 1, max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.booleans()
    | st.none()
    | st.lists(st.integers(), max_size=2)
)
entries = st.dictionaries(
    st.sampled_from(["input", "output", "cache_read", "cache_write", "reasoning", "model", "x"]),
    good | hostile | st.sampled_from(["claude-opus-4-6", "<script>", "\ud800"]),
    max_size=6,
)
usage_values = st.lists(entries | hostile, max_size=5) | hostile | st.text(max_size=5)


def _counts(entry: Any) -> Tokens | None:
    """An entry's tokens when every count of it is a whole number from 0 to MAX_TOKENS (and
    its parts within their wholes), None when it must not count: an independent reading of
    docs/format-extensions.md."""
    if not isinstance(entry, dict):
        return None
    if "model" in entry and not isinstance(entry["model"], str):
        return None
    values = {}
    for key in ("input", "output", "cache_read", "cache_write", "cache_write_1h", "reasoning"):
        value = entry.get(key, 0)
        if type(value) is not int or value < 0 or value > MAX_TOKENS:
            return None
        values[key] = value
    if values["reasoning"] > values["output"] or values["cache_write_1h"] > values["cache_write"]:
        return None
    del values["cache_write_1h"]
    return Tokens(**values)


@pytest.mark.unit
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(usage_values)
def test_hostile_usage_never_breaks_a_page_and_never_counts(value: Any) -> None:
    """Negative, huge, fractional, NaN, text or nested counts: the session loads, its
    page and exports render, and only the entries made of counts count."""
    doc = usage_session("claude-opus-4-6")
    doc["turns"][0]["usage"] = value
    session = session_from_json(json.loads(json.dumps(doc)), "x.json")
    expected: Tokens | None = None
    if isinstance(value, list):
        for entry in value:
            counted = _counts(entry)
            if counted is not None:
                expected = counted if expected is None else expected.plus(counted)
    assert tokens_of(session) == expected
    html = "".join(export_html(session))
    assert "<script" not in html  # (the file has no script; a model named so is text)
    markdown = "".join(export_markdown(session))
    if value is not None:
        assert "**Usage, as written:**" in markdown
    problems = sum(1 for u in session.turns[0].usage if u.problem)
    if problems:
        assert "not counted" in markdown


# --- one figure everywhere -----------------------------------------------------------------


def _page_figures(page: str) -> tuple[int, str]:
    """(total tokens, cost) as a session page's overview gives them."""
    tokens = re.search(r'<div class="spend-fact"><dt>Tokens</dt><dd>([\d,]+) tokens', page)
    cost = re.search(r'<div class="spend-fact"><dt>Cost</dt><dd>([^<]+?) <span', page)
    assert tokens and cost
    return int(tokens.group(1).replace(",", "")), cost.group(1)


@pytest.mark.site
def test_page_json_summary_and_junit_agree(codex_project: Path, tmp_path: Path) -> None:
    """For every session with usage: the page's overview, ``sessions --format json``, the
    ``--summary`` and the JUnit properties give the same tokens and cost."""
    folder = sessions_dir(codex_project)
    build(folder, tmp_path / "site")
    listing = {
        item["name"]: item
        for item in json.loads(
            polyglav("sessions", "--format", "json", "--project", str(folder)).stdout
        )
    }
    checked = 0
    for name, item in listing.items():
        if item["tokens"] is None:
            assert "spend-fact" not in page_of(tmp_path / "site", name).read_text()
            continue
        total = sum(item["tokens"][k] for k in ("input", "output", "cache_read", "cache_write"))
        shown = view.usd(round(item["cost_usd"] * 10**6))
        assert _page_figures(page_of(tmp_path / "site", name).read_text()) == (total, shown)
        summary = polyglav(
            "check", f"session:{name}", "--project", str(folder), "--no-sub-sessions",
            "--fail-on", "error", "--summary", "-",
        ).stdout  # fmt: skip
        assert f"- **Tokens and cost:** {total:,} tokens (" in summary
        assert f"), {shown}" in summary
        xml = polyglav(
            "export", f"session:{name}", "--project", str(folder), "--format", "junit",
            "--out", "-", "--no-sub-sessions",
        ).stdout  # fmt: skip
        suite = etree.fromstring(xml.encode())[0]
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        for key, n in item["tokens"].items():
            assert props[f"tokens_{key}"] == str(n)
        assert float(props["cost_usd"]) == item["cost_usd"]
        checked += 1
    assert checked >= 5


@pytest.mark.site
def test_a_caller_shows_its_sub_agents_spend_apart(claude_project: Path, tmp_path: Path) -> None:
    """Sub-sessions are rolled up into their parent, the parent's own figure apart: the
    JSON's tokens_total is its own plus its sub-sessions', and the page says both."""
    folder = sessions_dir(claude_project)
    listing = json.loads(polyglav("sessions", "--format", "json", "--project", str(folder)).stdout)
    by_name = {item["name"]: item for item in listing}
    parents = [i for i in listing if i.get("sub_sessions") and i["tokens"] is not None]
    assert parents
    build(folder, tmp_path / "site")
    for item in parents:
        expected = dict(item["tokens"])
        for child in item["sub_sessions"]:
            for key, n in (by_name[child]["tokens"] or {}).items():
                expected[key] += n
        assert item["tokens_total"] == expected
        page = page_of(tmp_path / "site", item["name"]).read_text()
        total = sum(expected[k] for k in ("input", "output", "cache_read", "cache_write"))
        below = re.search(r'<p class="below-total">With its sub-agents: (.*?)</p>', page)
        assert below is not None and f"{total:,} tokens" in below.group(1)


# --- price files -------------------------------------------------------------------------


@pytest.mark.unit
def test_a_price_file_prices_what_it_lists(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps(
            {
                "name": "our rates",
                "models": [
                    {"model": UNKNOWN, "input": 2, "output": 10},
                    {"model": "acme-*", "provider": "acme", "from": "2026-01-01",
                     "input": "0.5", "output": 1, "cache_read": 0.05,
                     "tiers": [{"above": 100000, "input": 1}]},
                ],
            }
        ),
        encoding="utf-8",
    )  # fmt: skip
    prices = Prices(load_price_file(path))
    assert prices.label.startswith("our rates (sha256 ")
    s = session_from_json(usage_session(), "x.json")
    spend = session_spend(s, prices)
    # 1,000 input and 5,000 cache reads at $2 (cache reads cost input when not given),
    # 200 output at $10 a million tokens
    assert spend.picousd == (6000 * 2 + 200 * 10) * 10**6
    assert spend.cost_usd == 0.014 and view.cost_line(spend) == "$0.0140"
    assert prices.rates("", "claude-opus-4-6", "2026-02-01") is None  # replaced, no fallback
    acme = prices.rates("acme", "ACME-large", "2026-02-01")
    assert acme is not None and acme.input.at(100_001) == 10**6 and acme.input.at(10) == 500_000
    assert prices.rates("other", "acme-large", "2026-02-01") is None
    assert prices.rates("acme", "acme-large", "2025-12-31") is None
    doc = json.loads(path.read_text())
    doc["fallback"] = "genai-prices"
    path.write_text(json.dumps(doc), encoding="utf-8")
    both = Prices(load_price_file(path))
    assert both.rates("anthropic", "claude-opus-4-6", "2026-02-01") is not None
    assert both.label.endswith(", then genai-prices " + view_version())
    # A worker process gets the table pickled: the same table, its lookups made again.
    for table in (Prices(), prices, both):
        again = pickle.loads(pickle.dumps(table))
        assert (again.key, again.label) == (table.key, table.label)
        for provider, model in (("anthropic", "claude-opus-4-6"), ("acme", "acme-large")):
            assert again.rates(provider, model, "2026-02-01") == table.rates(
                provider, model, "2026-02-01"
            )


def view_version() -> str:
    from publisher.usage import shipped_version

    return shipped_version()


@pytest.mark.unit
@pytest.mark.parametrize(
    ("doc", "said"),
    [
        (
            {"models": [{"model": "m", "input": -1, "output": 1}]},
            "models[0].input: expected a price",
        ),
        ({"models": [{"model": "m", "input": "NaN", "output": 1}]}, "models[0].input"),
        ({"models": [{"model": "m", "output": 1}]}, "models[0].input: missing"),
        ({"models": [{"model": "m", "input": 1, "output": 1, "from": "2026-13-01"}]}, "from"),
        ({"models": [{"model": "m", "input": 1, "output": 1, "tiers": [{"above": 1.5}]}]}, "above"),
        ({"models": [], "fallback": "litellm"}, "fallback"),
        ({"models": [{"model": "m", "input": 1, "output": 1, "typo": 1}]}, "unknown field 'typo'"),
        ([], "expected an object with a models array"),
    ],
)
def test_a_bad_price_file_is_a_usage_error(tmp_path: Path, doc: Any, said: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(PriceFileError, match=re.escape(said)):
        load_price_file(path)
    result = polyglav("sessions", "--format", "json", "--prices", str(path), "--project",
                      str(ROOT / "sample_sessions"))  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith(f"polyglav: error: --prices: {path}: ")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.site
def test_a_price_file_prices_the_site_and_its_change_rebuilds_it(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    doc = usage_session()
    (folder / f"{doc['session_name']}.json").write_text(json.dumps(doc), encoding="utf-8")
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": [{"model": UNKNOWN, "input": 2, "output": 10}]}))
    site = tmp_path / "site"
    build(folder, site, prices=Prices(load_price_file(path)))
    page = page_of(site, doc["session_name"]).read_text()
    assert "<dt>Cost</dt><dd>$0.0140 <span" in page and "prices.json (sha256" in page
    path.write_text(json.dumps({"models": [{"model": UNKNOWN, "input": 4, "output": 10}]}))
    build(folder, site, prices=Prices(load_price_file(path)))
    assert "<dt>Cost</dt><dd>$0.0260 <span" in page_of(site, doc["session_name"]).read_text()


# --- offline and lazy ----------------------------------------------------------------------


@pytest.mark.unit
def test_pricing_never_touches_the_network() -> None:
    """The shipped table prices with every socket refused, and starts no thread (its
    updater, which would fetch, is never started)."""
    script = """
import socket, threading
def refuse(*args, **kwargs):
    raise AssertionError("network used")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from publisher.usage import Prices
rates = Prices().rates("anthropic", "claude-opus-4-6", "2026-02-01")
assert rates is not None and rates.output.base == 25 * 10**6
assert threading.active_count() == 1, threading.enumerate()
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=python_env(), cwd=ROOT
    )
    assert done.stdout.strip() == "ok", done.stderr


@pytest.mark.unit
def test_reading_without_usage_never_imports_the_price_table() -> None:
    """The read-only commands, and a listing of sessions without usage (even as JSON), do
    not import genai-prices (it costs about 0.3 s of CPU)."""
    script = """
import sys
from publisher.cli import main
for args in (["sessions", "--project", "sample_sessions"],
             ["sessions", "--format", "json", "--project", "sample_sessions"],
             ["history", "--run", "#ab12cd", "--project", "sample_sessions"]):
    sys.argv = ["polyglav", *args]
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc.code
assert not [m for m in sys.modules if m.startswith(("genai_prices", "pydantic", "httpx"))]
print("ok", file=sys.stderr)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=python_env(), cwd=ROOT
    )
    assert done.stderr.strip().endswith("ok"), done.stderr


# --- where the time went ------------------------------------------------------------------

T = "2026-08-17T12:{:02d}:{:02d}+00:00"


def _at(seconds: int) -> str:
    return T.format(seconds // 60, seconds % 60)


@pytest.mark.unit
def test_time_is_charged_to_what_the_run_waited_on() -> None:
    """A prompt at 0; thinking at 4 (model 4); a call at 6 (model 2) that asks permission,
    answered at 16 (the person 10), its result at 19 (tool 3); the answer at 25 (model 6);
    the turn ends at 25. The next turn's prompt, 60 s after, is 60 s waiting on the person."""
    call = part("tool", name="run", input={"command": "ls"}, output="x", timestamp=_at(6),
                ended_at=_at(19))  # fmt: skip
    doc = session_doc(
        turns=[
            turn(
                1,
                part("user", "go", timestamp=_at(0)),
                part("thinking", "t", timestamp=_at(4)),
                call,
                part("text", "done", timestamp=_at(25)),
                started_at=_at(0),
                ended_at=_at(25),
            ),
            turn(2, part("user", "again", timestamp=_at(85)), started_at=_at(85), ended_at=_at(86)),
        ],
        permissions=[
            {
                "tool": "run",
                "action": "ask",
                "decision": "granted",
                "path": "ls",
                "timestamp": _at(16),
            }
        ],
    )
    s = session_from_json(doc, "x.json")
    from publisher.audit import Audit
    from publisher.render.places import asks_in

    first = view.TurnTimes.of(s.turns[0], asks_in(s, Audit.of(s), 0))
    assert (first.model, first.tool, first.person, first.work) == (12.0, 3.0, 10.0, 15.0)
    second = view.TurnTimes.of(s.turns[1], (), s.turns[0].ended_at)
    assert (second.before, second.waiting, second.model) == (60.0, 60.0, 1.0)
    html = "".join(export_html(s))
    assert "<dt>Waiting on the person</dt><dd>1m10s</dd>" in html  # overview: 10 s + 60 s


@pytest.mark.unit
def test_a_call_without_a_result_time_is_tool_time_to_the_next_record() -> None:
    """Polyglav's own format has no time for a result: from the call to the next record is
    the tool's; a parked ask's answer is the person's; a long stretch not waiting on the
    person is idle."""
    doc = session_doc(
        turns=[
            turn(
                1,
                part("user", "go", timestamp=_at(0)),
                part("tool", name="run", input={}, output="x", timestamp=_at(2)),
                part("text", "a", timestamp=_at(10)),
                part("user", "[answer to parked ask #a1] yes", timestamp=_at(40)),
                part("text", "b", timestamp=_at(45)),
                started_at=_at(0),
                ended_at=_at(45),
            ),
        ]
    )
    s = session_from_json(doc, "x.json")
    times = view.TurnTimes.of(s.turns[0])
    assert (times.model, times.tool, times.person) == (7.0, 8.0, 30.0)
    long = dict(doc["turns"][0], ended_at="2026-08-17T14:00:00+00:00")
    times = view.TurnTimes.of(session_from_json(session_doc(turns=[long]), "y.json").turns[0])
    assert times.idle and math.isclose(times.idle[0], 7200 - 45)


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _result_times(lines: list[str], codex: bool) -> Counter[datetime]:
    """When each tool result was written, read from a log's lines: a Claude Code record's
    ``tool_result`` blocks, a Codex rollout's ``function_call_output`` items."""
    found: Counter[datetime] = Counter()
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or not isinstance(record.get("timestamp"), str):
            continue
        payload, message = record.get("payload"), record.get("message")
        if codex and isinstance(payload, dict) and record.get("type") == "response_item":
            if payload.get("type") in ("function_call_output", "custom_tool_call_output"):
                found[_when(record["timestamp"])] += 1
        elif not codex and isinstance(message, dict) and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found[_when(record["timestamp"])] += 1
    return found


def _ended(sessions: list[Session]) -> Counter[datetime]:
    return Counter(
        _when(p.ended_at)
        for s in sessions
        for t in s.turns
        for p in t.parts
        if isinstance(p, ToolPart) and p.ended_at
    )


@pytest.mark.site
def test_real_logs_time_every_result_and_split_every_turn(
    claude_project: Path, codex_project: Path
) -> None:
    """On the real logs: every call's result time is the time its log wrote the result
    (read from the log's lines, not through the importer), and each turn's span is split
    whole between the model, tools, the person and idle stretches."""
    claude = list(loaded(claude_project).values())
    raw: Counter[datetime] = Counter()
    for folder in CLAUDE_UNITS:
        for log in sorted((FIXTURES / folder).rglob("*.jsonl")):
            raw += _result_times(log.read_text(encoding="utf-8").splitlines(), codex=False)
    # (a replayed exchange is published once: the same times, fewer of them)
    assert set(_ended(claude)) == set(raw) and sum(_ended(claude).values()) >= 25
    codex = loaded(codex_project)
    for path in sorted(CODEX.glob("rollout-*.jsonl")):
        (session,) = [s for s in codex.values() if s.extra["imported_from"]["path"] == str(path)]
        copied_to = max(
            (b["lines"][1] for b in session.extra.get("codex_inherited", [])), default=0
        )
        lines = path.read_text(encoding="utf-8").splitlines()[copied_to:]
        assert _ended([session]) == _result_times(lines, codex=True), path.name
    split = 0
    for session in [*claude, *codex.values()]:
        for times in turn_times(session, Audit.of(session)):
            if times.span is None:
                continue
            parts = (times.model, times.tool, times.person, *times.idle)
            assert min(parts) >= 0
            assert math.isclose(sum(parts), times.span, abs_tol=1e-6)
            assert times.work is not None and math.isclose(times.work, times.model + times.tool)
            split += 1
    assert split >= 40


# --- the archive ---------------------------------------------------------------------------

WINDOW = [  # real logs of February and March 2026: all within the chart's 30 days
    FIXTURES / "claude_code",
    CODEX / "rollout-2026-03-05T22-50-24-019cc1e9-6537-70a3-a8cd-d2957e043dd4.jsonl",
    CODEX / "rollout-2026-03-06T15-07-24-019cc379-79d6-7c21-885e-132b8a0c295f.jsonl",
]


@pytest.fixture(scope="module")
def window_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("window")
    assert run_import("claude-code", WINDOW[0], project=project)[0] == 0
    assert run_import("codex", *WINDOW[1:], project=project)[0] == 0
    return project


def _index_rows(index: str) -> dict[str, tuple[int, int, str]]:
    """Session name → (tokens, cost in micro-dollars, cost as shown) of each index row
    (-1 when it has none)."""
    rows = {}
    for row in re.findall(r"<tr data-kind=.*?</tr>", index, re.S):
        name = re.search(r'data-label="Session" class="c-name"><a href="[^"]*"><code>([^<]+)<', row)
        tokens = re.search(r'data-value="(-?\d+)" data-label="Tokens"', row)
        cost = re.search(r'data-value="(-?\d+)" data-label="Cost" class="num c-cost">([^<]*)<', row)
        assert name and tokens and cost
        rows[name.group(1)] = (int(tokens.group(1)), int(cost.group(1)), cost.group(2))
    return rows


@pytest.mark.site
def test_the_index_and_its_activity_agree_with_the_json(
    window_project: Path, tmp_path: Path
) -> None:
    """Each index row's tokens and cost (its sort values and what it shows) are the JSON's;
    the activity's tokens by day, by model and by role add up to every session's."""
    folder = sessions_dir(window_project)
    build(folder, tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    rows = _index_rows(index)
    listing = json.loads(polyglav("sessions", "--format", "json", "--project", str(folder)).stdout)
    total = 0
    for item in listing:
        tokens = item["tokens"]
        if tokens is None:
            assert rows[item["name"]] == (-1, -1, "-")
            continue
        own = sum(tokens[k] for k in ("input", "output", "cache_read", "cache_write"))
        micro = round(item["cost_usd"] * 10**6)
        assert rows[item["name"]] == (own, micro, view.usd(micro))
        total += own
    spend = index[index.index('id="spend-h"') :]
    tables = re.findall(r"<caption>(By \w+)</caption>.*?</table>", spend, re.S)
    assert tables == ["By day", "By model", "By role"]
    for table in re.findall(r"<caption>By \w+</caption>(.*?)</table>", spend, re.S):
        counts = re.findall(r'</th><td class="num">([\d,]+)</td>', table)
        assert sum(int(c.replace(",", "")) for c in counts) == total
    assert f"{total:,} tokens, $" in spend


@pytest.mark.site
def test_an_appended_turn_with_usage_builds_as_a_fresh_build(
    window_project: Path, tmp_path: Path
) -> None:
    """The index's and the activity's figures kept from the last build and brought up to
    date equal a fresh build's, byte for byte, when a session's usage grows."""
    folder = tmp_path / "sessions"
    shutil.copytree(sessions_dir(window_project), folder)
    site = tmp_path / "site"
    build(folder, site)
    name = next(p for p in sorted(folder.glob("ses_*.json")) if '"usage"' in p.read_text())
    doc = json.loads(name.read_text())
    last = dict(doc["turns"][-1])
    last["index"] = len(doc["turns"]) + 1
    last["usage"] = [{"model": "claude-opus-4-6", "input": 7, "output": 11, "cache_read": 1000}]
    doc["turns"].append(last)
    name.write_text(json.dumps(doc), encoding="utf-8")
    build(folder, site)
    assert tree_digest(site) == fresh_digest(folder, tmp_path / "fresh")


def _kept_spend(out: Path, cache: Path) -> tuple[list[Any], list[Any]]:
    """The overview's spend the last build kept in its catalog, and the spend of every
    published session's catalog row added up by (day, role, model) there and then."""
    from publisher.site.catalog import Catalog
    from publisher.site.index import Overview

    catalog = cache / "catalog.sqlite"
    kept = Catalog.rows(catalog, "SELECT value FROM kept WHERE name = ?", (Overview.KEPT,))
    sums: dict[tuple[str, str, str], list[int]] = {}
    for role, spend in Catalog.rows(
        catalog, "SELECT role, spend FROM sources WHERE published AND spend IS NOT NULL", ()
    ):
        for day, model, tokens, pico, unpriced in json.loads(spend):
            row = sums.setdefault((day, role, model), [0, 0, 0])
            for i, n in enumerate((tokens, pico, unpriced)):
                row[i] += n
    counted = [[*key, *row] for key, row in sorted(sums.items()) if any(row)]
    return json.loads(kept[0][0])["spend"], counted


@pytest.mark.site
def test_spend_kept_from_build_to_build_equals_a_fresh_count(
    window_project: Path, tmp_path: Path
) -> None:
    """The overview's spend by (day, role, model), brought up to date from the rows a build
    set or dropped (a session with usage gone, one given a role, one's usage doubled, one's
    usage taken away), equals the spend counted again from every row, and the site equals a
    fresh build's, byte for byte."""
    folder = tmp_path / "sessions"
    shutil.copytree(sessions_dir(window_project), folder)
    age(*folder.iterdir())  # long unchanged: the next build trusts the others' stamps
    site, cache = tmp_path / "site", tmp_path / "cache"
    build(folder, site, cache_dir=cache)
    kept, counted = _kept_spend(site, cache)
    assert kept == counted and kept
    spent = [p for p in sorted(folder.glob("*.json")) if '"usage"' in p.read_text("utf-8")]
    assert len(spent) >= 4
    spent[0].unlink()

    def edit(path: Path, change: Any) -> None:
        doc = json.loads(path.read_text("utf-8"))
        change(doc)
        path.write_text(json.dumps(doc), "utf-8")

    edit(spent[1], lambda doc: doc.update(role="reviewer"))
    edit(spent[2], lambda doc: [t.update(usage=t.get("usage", []) * 2) for t in doc["turns"]])
    edit(spent[3], lambda doc: [t.pop("usage", None) for t in doc["turns"]])
    report = build(folder, site, cache_dir=cache)
    assert report.files_read == 3
    kept_after, counted_after = _kept_spend(site, cache)
    assert kept_after == counted_after
    assert kept_after != kept
    assert any(role == "reviewer" for _, role, *_ in kept_after)
    assert tree_digest(site) == fresh_digest(folder, tmp_path / "fresh")

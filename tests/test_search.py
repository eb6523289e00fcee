"""The search index: its terms (the same in Python and in the client's JavaScript), its
encoding, what of a session it holds, and how a build keeps it (bundles written again only
when their sessions changed, the index equal to a fresh build's)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tracemalloc
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from publisher.loader import SessionLoadError, read_session
from publisher.site.context import Tunables
from publisher.site.search import bundle, extract, shared, terms
from publisher.site.search.numbers import encode_shifted
from publisher.site.search.store import ChunkRow, SearchStore
from tests.helpers import (
    SAMPLES,
    build,
    cache_of,
    part,
    require,
    session_doc,
    tree_digest,
    turn,
)

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "themes" / "default" / "assets"
NODE = shutil.which("node")


def node_terms(texts: list[str]) -> tuple[list[list[str]], list[str]]:
    """The client's terms of each text, and its stems of the words of the first, in node
    (the client's own files, as the page loads them)."""
    require(NODE is not None, "node is not installed")
    script = """
    global.window = global;
    global.document = { readyState: "complete", getElementById: function () { return null; } };
    require(process.argv[1] + "/snowball-english.js");
    require(process.argv[1] + "/search.js");
    const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const api = window.__polyglavSearch;
    const out = { terms: input.texts.map((t) => api.terms(t)), stems: input.words.map((w) => api.stem(w)) };
    process.stdout.write(JSON.stringify(out));
    """
    words = sorted({w for w in re.findall("[a-z]+", texts[0].lower())})
    result = subprocess.run(
        [str(NODE), "-e", script, str(ASSETS)],
        input=json.dumps({"texts": texts, "words": words}),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    data = json.loads(result.stdout)
    return data["terms"], [f"{w} {s}" for w, s in zip(words, data["stems"], strict=True)]


def real_text() -> str:
    """Thousands of English words of real prose: this project's README, docs and the
    docstrings and comments of its code."""
    parts = [(ROOT / "README.md").read_text(encoding="utf-8")]
    parts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    parts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "publisher").rglob("*.py"))]
    return "\n".join(parts)


UNICODE_TEXT = (
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ ﬁle ½ ΣΟΦΊΑΣ σοφίας Straße İstanbul naïve café "
    "検索エンジンの日本語テキスト 中文分词测试 한국어 문장 हिन्दी भाषा ١٢٣ العربية "
    "x\u0301y e\u0308 ﬀ ǅ ᾈ 𝐀𝐁𝐂 😀 parse_config camelCase 0x1F v1.2.3 don't "
)


@pytest.mark.unit
def test_python_and_javascript_make_the_same_terms_and_stems() -> None:
    """Snowball's English stemmer in Python (snowballstemmer) and in the client (the same
    Snowball version's JavaScript) stem every word of this project's documentation alike,
    and both make the same terms of it and of text in many scripts."""
    prose = real_text()
    words = set(re.findall("[a-z]+", prose.lower()))
    assert len(words) > 3000
    texts = [prose, UNICODE_TEXT, "Running runners ran quickly; generously connected."]
    js_terms, js_stems = node_terms(texts)
    python_stems = [f"{w} {terms.stem(w)}" for w in sorted(words)]
    assert js_stems == python_stems
    for text, theirs in zip(texts, js_terms, strict=True):
        assert theirs == terms.text_terms(text)


@pytest.mark.unit
def test_the_clients_tables_are_the_indexers() -> None:
    source = (ASSETS / "search.js").read_text(encoding="utf-8")
    table = "".join(
        re.findall(
            r'^\s+"([^"]*)"(?: \+|;)?$', source.split("var WORD_RANGES =")[1].split(";")[0], re.M
        )
    )
    assert table == terms.WORD_RANGES
    assert f'var CJK_RANGES = "{terms.CJK_RANGES}";' in source
    assert f"var MAX_WORD = {terms.MAX_WORD};" in source
    assert f'var DIGITS = "{bundle.DIGITS}";' in source


@pytest.mark.unit
def test_word_table_is_unicode_14s_letters_marks_and_numbers() -> None:
    import unicodedata

    require(unicodedata.unidata_version == "14.0.0", "the table is frozen at Unicode 14")
    inside = set()
    for first, last in terms.decode_ranges(terms.WORD_RANGES):
        inside.update(range(first, last + 1))
    for code in range(0x110000):
        assert (code in inside) == (unicodedata.category(chr(code))[0] in "LMN"), hex(code)


@pytest.mark.unit
def test_terms() -> None:
    assert terms.text_terms("Running the parse_config TESTS") == [
        "run",
        "the",
        "pars",
        "config",
        "test",
    ]
    assert terms.text_terms("日本語") == ["日本", "本語", "語"]
    assert terms.text_terms("中") == ["中"]
    assert terms.text_terms("ΣΟΦΊΑΣ") == ["σοφίασ"]
    assert terms.text_terms("ﬁle Ｆｕｌｌ") == ["file", "full"]
    assert terms.text_terms("a" * 65 + " ok") == ["ok"]


@pytest.mark.unit
@settings(max_examples=300)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200) | st.text(max_size=200))
def test_the_fast_counter_counts_the_exact_terms(text: str) -> None:
    """The byte split of :class:`TermCounter` gives the terms of the exact Unicode rules, in
    order, whether its memo knows the words or not."""
    counter = terms.TermCounter()
    raw = counter.raw_words(text)
    expected = terms.text_terms(text)
    assert [t for t in counter.terms(raw) if t] == expected  # words learnt
    assert [t for t in counter.terms(raw) if t] == expected  # words known


@pytest.mark.unit
@settings(max_examples=300)
@given(
    st.lists(
        st.sampled_from(
            ["", "x", "line of output", "y" * 200, "\x1b[31mred\x1b[0m", "@@ -1 +1 @@"]
        ),
        max_size=80,
    ),
    st.booleans(),
    st.integers(min_value=0, max_value=4000),
)
def test_indexed_output_is_what_the_page_marks_indexed(
    lines: list[str], final: bool, pad: int
) -> None:
    """The index's rule for outputs (indexed_output) is the page's (OutputView.indexed,
    the view the template shows)."""
    from publisher.model import Turn
    from publisher.render.html import indexed_output, output_view

    output = "\n".join(lines) + ("\n" if final else "") + "z" * pad
    view = output_view(Turn(index=1), 1, output, True, {})
    assert indexed_output(output) == view.indexed


@pytest.mark.unit
@given(st.lists(st.integers(min_value=0, max_value=2**40)))
def test_numbers_round_trip(values: list[int]) -> None:
    encoded = bundle.encode_numbers(values)
    assert set(encoded) <= set(bundle.DIGITS)
    assert bundle.decode_numbers(encoded) == values


@pytest.mark.unit
@given(st.integers(min_value=0, max_value=2**30), st.integers(min_value=0, max_value=31))
def test_a_turn_posting_is_its_number_encoded(position: int, impact: int) -> None:
    """A turn's posting made from its position's digits is the number position * 32 + impact
    encoded whole."""
    high = bundle.encode_numbers([position]) if position else ""
    assert encode_shifted(impact, high) == bundle.encode_numbers([position * 32 + impact])


def turns_of(record: extract.SessionRecord, term: str) -> list[int]:
    """A term's postings in a record, flat: position, impact, position, impact…"""
    count, encoded = record.postings[term]
    numbers = bundle.decode_numbers(encoded)
    assert len(numbers) == count
    flat = [x for n in numbers for x in (n // 32, n % 32)]
    assert flat[0::2] == sorted(set(flat[0::2])) and all(1 <= i <= 31 for i in flat[1::2])
    return flat


def record_of(doc: dict[str, object], tmp_path: Path) -> extract.SessionRecord:
    path = tmp_path / f"{doc['session_name']}.json"
    path.write_text(json.dumps(doc))
    return extract.session_record(read_session(path))


@pytest.mark.unit
def test_what_a_record_holds(tmp_path: Path) -> None:
    """What is indexed (docs/search.md): prompts, answers, tool names and inputs as shown,
    a short output whole and a long one's last 6 lines; the postings give each turn."""
    lines = [f"line {n} of the log" for n in range(1, 101)]
    lines[0] += " zqhead"
    lines[49] += " zqmiddle"
    lines[-10] += " zqshowntail"
    lines[-6] += " zqlastlines"
    output = "\n".join(lines) + "\n"
    turns = [
        turn(1, part("user", "please run zqprompt"), part("text", "an answer zqanswer")),
        turn(
            2,
            part("tool", name="run_command", input={"command": "make zqcommand"}, output=output),
            part("tool", name="custom_tool", input={"flag": "zqjson"}, output="zqshort\n"),
            part(
                "tool", name="run_command", input={"command": "cat"}, output="x\n" * 30 + "y" * 4000
            ),
        ),
    ]
    record = record_of(session_doc("ses_20260101_000001_rec001", turns=turns), tmp_path)
    where = {t: turns_of(record, t)[0::2] for t in record.postings if t.startswith("zq")}
    assert where == {
        "zqprompt": [0],
        "zqanswer": [0],
        "zqcommand": [1],
        "zqjson": [1],
        "zqshort": [1],
        "zqlastlin": [1],
    }, where
    docs = [extract.fields_of(d) for d in record.docs]
    assert [a for a, _ in docs] == ["turn-1", "turn-2"]
    assert [f.kind for f in docs[0][1]] == ["p", "a"]
    assert [(f.kind, f.suffix) for f in docs[1][1]][:2] == [("i", ".1"), ("o", ".1")]
    assert record.aliases["please"] == "pleas" and record.aliases["zqlastlines"] == "zqlastlin"
    assert extract.SessionRecord.from_bytes(record.to_bytes()) == record


@pytest.mark.unit
def test_a_record_that_is_not_one_does_not_read(tmp_path: Path) -> None:
    """The cache's record is checked as it reads back: lists of other lengths or items of
    other types (a damaged or foreign file that is still JSON) are no record (the bundle
    makes it again from its session), never a bundle of wrong postings."""
    turns = [turn(1, part("user", "zqword please")), turn(2, part("text", "zqother"))]
    record = record_of(session_doc("ses_20260101_000001_rec003", turns=turns), tmp_path)
    data = record.to_bytes()
    head, _, rest = data.partition(b"\n")
    assert extract.SessionRecord.from_bytes(data) == record

    def damaged(change: Callable[[list[Any]], None]) -> bytes:
        v = json.loads(head)
        change(v)
        return json.dumps(v).encode() + b"\n" + rest

    def shorter_counts(v: list[Any]) -> None:
        v[10][1].pop()

    def count_as_text(v: list[Any]) -> None:
        v[10][1][0] = "1"

    def count_as_bool(v: list[Any]) -> None:
        v[10][1][0] = True

    def postings_as_number(v: list[Any]) -> None:
        v[10][2][0] = 5

    def term_as_list(v: list[Any]) -> None:
        v[10][0][0] = ["x"]

    def alias_as_number(v: list[Any]) -> None:
        v[9]["please"] = 1

    def old_layout(v: list[Any]) -> None:
        v[10] = {t: [c, p] for t, c, p in zip(*v[10], strict=True)}

    for change in (shorter_counts, count_as_text, count_as_bool, postings_as_number,
                   term_as_list, alias_as_number, old_layout):  # fmt: skip
        assert extract.SessionRecord.from_bytes(damaged(change)) is None, change.__name__


_JSON_TEXT = st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF))


@pytest.mark.unit
@settings(max_examples=300)
@given(st.recursive(st.one_of(_JSON_TEXT, st.integers()), lambda x: st.lists(x, max_size=4)))
@example(['\u2028\u2029\x7f\x00\x1f</script>\\"', 2**70, -1])
@example(["\ud800", "a"])
def test_compact_json_is_json_dumps(data: object) -> None:
    """The records' and the index files' JSON (msgspec's encoder) is the text
    ``json.dumps`` writes, a lone surrogate included (it takes ``json.dumps``)."""
    assert extract.compact_json(data) == json.dumps(data, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.unit
def test_a_record_holding_a_lone_surrogate_reads_back(tmp_path: Path) -> None:
    turns = [turn(1, part("user", "zqword please"))]
    record = record_of(session_doc("ses_20260101_000001_rec004", turns=turns), tmp_path)
    record.kind = "job\ud800"  # (what the page's filter shows: not cleaned as a text is)
    data = record.to_bytes()
    assert b"\xed\xa0\x80" in data.partition(b"\n")[0]
    assert extract.SessionRecord.from_bytes(data) == record


@pytest.mark.unit
def test_a_prompt_weighs_more_than_output(tmp_path: Path) -> None:
    turns = [
        turn(1, part("user", "zqword")),
        turn(2, part("tool", name="run_command", input={"command": "ls"}, output="zqword\n")),
    ]
    record = record_of(session_doc("ses_20260101_000001_rec002", turns=turns), tmp_path)
    _, first, _, second = turns_of(record, "zqword")
    assert first > second


@pytest.mark.unit
def test_a_turns_impacts_are_bm25_of_its_weighted_counts(tmp_path: Path) -> None:
    """Each posting's impact is :func:`extract.impact` of the term's weighted count in the
    turn (a prompt's words 3, an output's 1) and the turn's length in words, in every
    turn of a session (the postings are made a turn at a time, the impact in two halves)."""
    output = "zq1 zq3 zq3\n" * 3
    turns = [
        turn(1, part("user", "zq1 zq1 zq2 zq9")),
        turn(2, part("user", "zq1"), part("tool", name="run_command", input={"command": "ls"},
                                          output=output)),
    ] + [turn(3 + k, part("user", " ".join(["zq1"] * (k + 1) + ["zq8"] * 40))) for k in range(40)]  # fmt: skip
    record = record_of(session_doc("ses_20260101_000001_rec004", turns=turns), tmp_path)
    zq1 = turns_of(record, "zq1")
    assert zq1[:4] == [0, extract.impact(6.0, 4), 1, extract.impact(3.0 + 3.0, 13)]
    assert turns_of(record, "zq3") == [1, extract.impact(6.0, 13)]
    for k in range(40):  # (positions past 32: a posting of more than one digit)
        assert zq1[4 + 2 * k : 6 + 2 * k] == [2 + k, extract.impact(3.0 * (k + 1), 41 + k)]


def bundle_data(made: bundle.BundleFiles, ident: str) -> dict[str, object]:
    """Each file's data, by name (each file checked to be the call the client expects)."""
    data = {}
    for name, body in made.files.items():
        match = re.fullmatch(
            rf'__polyglavSearch\.add\("{ident}","(\w)","([\w-]+)",(.*)\);\n', body.decode()
        )
        assert match, name
        assert f"{match[2]}.js" == name and name.startswith(match[1] + "-")
        data[match[2]] = json.loads(match[3])
    return data


def sample_records() -> list[extract.SessionRecord]:
    records = []
    for path in sorted(SAMPLES.glob("*.json")):
        try:
            records.append(extract.session_record(read_session(path)))
        except SessionLoadError:
            continue
    return records


def shared_chunks(
    bundles: dict[int, list[tuple[str, str]]], chunk_bytes: int
) -> tuple[list[ChunkRow], dict[str, bytes]]:
    """The shared term chunks of bundles' term entries (bundle number → its entries, as
    :attr:`.bundle.BundleFiles.terms`), made in memory as a build makes them: the rows in
    the order of the cache's query (key, then bundle)."""
    rows = sorted(
        (bundle.js_order(term), number, term, entry)
        for number, entries in bundles.items()
        for term, entry in entries
    )
    files: dict[str, bytes] = {}
    made = list(shared.chunk_entries(shared.entries(rows), chunk_bytes, files.__setitem__))
    return made, files


def chunk_data(files: dict[str, bytes]) -> dict[str, list[list[Any]]]:
    """Each shared chunk's entries, by name (each file checked to be the client's call)."""
    data = {}
    for name, body in files.items():
        match = re.fullmatch(
            r'__polyglavSearch\.add\("terms","t","([\w-]+)",(.*)\);\n', body.decode()
        )
        assert match and f"{match[1]}.js" == name, name
        data[match[1]] = json.loads(match[2])
    return data


@pytest.mark.unit
def test_a_bundle_holds_its_records_postings_and_documents() -> None:
    records = sample_records()
    made = bundle.bundle_files("b000-of-001", records, doc_bytes=500)
    data = bundle_data(made, "b000-of-001")
    meta = data[made.meta]
    assert isinstance(meta, dict)
    starts_data = meta["starts"]
    assert isinstance(starts_data, list)
    doc_names = starts_data[1].split(" ")
    # Every file but the meta is named by what it holds: its bundle, kind and payload.
    assert set(data) == {*doc_names, meta["facets"], made.meta}
    for name in set(data) - {made.meta}:
        kind = name.split("-")[0]
        payload = json.dumps(data[name], ensure_ascii=False, separators=(",", ":"))
        assert name == f"{kind}-{bundle.content_name('b000-of-001', kind, payload)}"
    assert len(doc_names) > 1
    # The term entries, in the client's order, merged into shared chunks (bundle 5 here).
    assert [bundle.js_order(t) for t, _ in made.terms] == sorted(
        bundle.js_order(t) for t, _ in made.terms
    )
    chunks, files = shared_chunks({5: made.terms}, chunk_bytes=300)
    by_name = chunk_data(files)
    assert [f"{c.name}.js" for c in chunks] == list(files) and len(chunks) > 3
    firsts = shared.separators(chunks)
    ordered = sorted(records, key=lambda r: r.slug)
    seen: dict[str, list[tuple[int, int, int]]] = {}
    last = ""
    for i, chunk in enumerate(chunks):
        # Where each chunk starts: a beginning of its first word, after the previous
        # chunk's last word; it begins at a word that says so, and no other of its words
        # does (the first chunk begins at the beginning, the last ends at the end).
        entries = by_name[chunk.name]
        first, start = entries[0][0], firsts[i]
        assert (chunk.first, chunk.last) == (first, entries[-1][0])
        assert first.startswith(start) and (
            i == 0 or bundle.js_order(start) > bundle.js_order(last)
        )
        assert [bundle.js_order(e[0]) for e in entries] == sorted(
            bundle.js_order(e[0]) for e in entries
        )
        begins = [
            shared.cut_before(
                e[0], len(json.dumps(e, ensure_ascii=False, separators=(",", ":"))), 300
            )
            for e in entries
        ]
        assert (i == 0 or begins[0]) and not any(begins[1:])
        last = entries[-1][0]
        for entry in entries:
            term, stem, rest = entry[0], entry[1], entry[2:]
            if stem:  # an alias: an English word and its stem
                assert any(r.aliases.get(term) == stem for r in records)
            if not rest:
                assert stem
                continue
            number, count, postings = rest
            assert number == 5
            numbers = bundle.decode_numbers(postings)
            k, session, flat = 0, 0, []
            while k < len(numbers):
                session += numbers[k] // 2
                many = numbers[k + 1] + 2 if numbers[k] % 2 else 1
                k += 2 if numbers[k] % 2 else 1
                for _ in range(many):
                    flat.append((session, numbers[k] // 32, numbers[k] % 32))
                    k += 1
            assert count == len(flat)
            seen[term] = flat
    for number, record in enumerate(ordered):
        for term in record.postings:
            flat = turns_of(record, term)
            mine = [(p, imp) for s, p, imp in seen[term] if s == number]
            assert mine == list(zip(flat[0::2], flat[1::2], strict=True))
    assert meta["documents"] == sum(len(r.docs) for r in records) == made.documents
    # Every turn is in the document chunk the starts say, as its record has it.
    starts = bundle.decode_numbers(starts_data[0])
    firsts_of = []
    session = 0
    for k in range(0, len(starts), 2):
        session += starts[k]
        firsts_of.append((session, starts[k + 1]))
    for number, record in enumerate(ordered):
        for position, doc in enumerate(record.docs):
            chunk_at = max(i for i, first in enumerate(firsts_of) if first <= (number, position))
            segments = data[doc_names[chunk_at]]
            assert isinstance(segments, list)
            segment = next(s for s in segments if s[0] == number)
            assert segment[1:4] == [record.name, record.slug, record.pages]
            assert segment[5][position - segment[4]] == json.loads(doc)


@pytest.mark.unit
def test_a_terms_entry_holds_each_bundles_postings() -> None:
    """A term of several bundles is one entry of the shared chunks: its postings in each
    bundle, by number; an alias in one bundle and a term in another are one entry too."""
    made, files = shared_chunks(
        {
            3: [("running", '"run"'), ("zeta", '[2,"AB"]')],
            1: [("run", '[1,"A"]'), ("zeta", '[1,"C"]')],
            7: [("run", '[4,"BCDE"]'), ("running", '[1,"D"]')],
        },
        chunk_bytes=10**6,
    )
    (entries,) = chunk_data(files).values()
    assert entries == [
        ["run", "", 1, 1, "A", 7, 4, "BCDE"],
        ["running", "run", 7, 1, "D"],
        ["zeta", "", 1, 1, "C", 3, 2, "AB"],
    ]
    assert [(c.first, c.last) for c in made] == [("run", "zeta")]


@pytest.mark.unit
def test_an_appended_turn_renames_only_the_files_it_touches() -> None:
    """Issue 33: files rewritten by an append do not grow with the bundle. Every file but
    the meta is named by what it holds and chunks end where their terms (turns) say, not
    where the bytes before them do: a session that got a turn changes its document chunk
    (and a neighbour at most) and the meta of its bundle, the entries of that turn's words,
    and the shared term chunks holding them; every other file keeps its name. A bundle of
    24 sessions and one of 384 rewrite the same files."""
    import copy

    path = SAMPLES / "ses_20260817_120000_ab12cd.json"
    session = read_session(path)
    base = extract.session_record(session)
    grown = copy.deepcopy(session)
    grown.turns.append(copy.deepcopy(grown.turns[-1]))
    grown.turns[-1].index = grown.turns[-2].index + 1
    appended = extract.session_record(grown)
    assert len(appended.docs) == len(base.docs) + 1
    turn_terms = {
        t for t, (n, _) in appended.postings.items() if base.postings.get(t, (0,))[0] != n
    }

    def named(record: extract.SessionRecord, i: int) -> extract.SessionRecord:
        return replace(record, name=f"{record.name}-{i:03d}", slug=f"{record.slug}-{i:03d}")

    rewritten = []
    for count in (24, 384):
        before = [named(base, i) for i in range(count)]
        after = [named(appended if i == count // 2 else base, i) for i in range(count)]
        old = bundle.bundle_files("b000-of-001", before, doc_bytes=500)
        new = bundle.bundle_files("b000-of-001", after, doc_bytes=500)
        changed = {name for name in old.files.keys() ^ new.files.keys()}
        assert all(
            old.files[name] == new.files[name] for name in old.files.keys() & new.files.keys()
        )
        kinds = [name.split("-")[0] for name in sorted(changed - old.files.keys())]
        assert kinds.count("m") == 1 and "f" not in kinds, kinds
        assert 1 <= kinds.count("d") <= 2, kinds
        assert {t for t, _ in set(old.terms) ^ set(new.terms)} == turn_terms
        _, old_chunks = shared_chunks({0: old.terms}, chunk_bytes=300)
        _, new_chunks = shared_chunks({0: new.terms}, chunk_bytes=300)
        renamed = new_chunks.keys() - old_chunks.keys()
        assert 1 <= len(renamed) <= len(turn_terms), (len(renamed), len(turn_terms))
        rewritten.append(sorted(kinds) + ["t"] * len(renamed))
        assert len(changed) < len(old.files) / 2, (len(changed), len(old.files))
    assert rewritten[0] == rewritten[1], rewritten


@pytest.mark.unit
def test_files_whose_short_names_are_the_same_get_long_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two files of one bundle whose short content names are the same (40 bits: about one
    bundle in ten million) are told apart: the second takes a long name, the meta names
    each, and the bundle reads as it would with no collision."""
    records = sample_records()
    plain = bundle.bundle_files("b000-of-001", records, doc_bytes=500)
    real = bundle.content_name

    def colliding(ident: str, kind: str, payload: str, length: int = bundle.SHORT_NAME) -> str:
        return "a" * length if length == bundle.SHORT_NAME else real(ident, kind, payload, length)

    monkeypatch.setattr(bundle, "content_name", colliding)
    made = bundle.bundle_files("b000-of-001", records, doc_bytes=500)
    assert len(made.files) == len(plain.files)
    names = sorted(made.files)
    assert sum(len(n) == len("d-.js") + bundle.SHORT_NAME for n in names) == 2  # d, f
    data, before = bundle_data(made, "b000-of-001"), bundle_data(plain, "b000-of-001")
    meta, meta_before = data[made.meta], before[plain.meta]
    assert isinstance(meta, dict) and isinstance(meta_before, dict)
    chunks, chunks_before = meta["starts"][1].split(" "), meta_before["starts"][1].split(" ")
    assert [data[n] for n in chunks] == [before[n] for n in chunks_before]
    assert data[meta["facets"]] == before[meta_before["facets"]]


_TERM = st.text(alphabet="abé中\U0001f600", min_size=1, max_size=4)
_ENTRY = st.one_of(
    st.tuples(st.integers(1, 9), st.text(alphabet="ABCD", min_size=1, max_size=30)).map(
        lambda t: f'[{t[0]},"{t[1]}"]'
    ),
    _TERM.map(json.dumps),
)
_BUNDLE = st.dictionaries(_TERM, _ENTRY, max_size=25)


_SMALL, _LARGE = '[1,"A"]', f'[1,"{"A" * 60}"]'


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(
    before=st.dictionaries(st.integers(0, 5), _BUNDLE, max_size=5),
    after=st.lists(st.tuples(st.integers(0, 5), st.none() | _BUNDLE), min_size=1, max_size=4),
    chunk_bytes=st.sampled_from([20, 60, 200, 10**6]),
)
# The first word of a chunk whose entry shrank and no longer begins a chunk ("b": its chunk
# joins the one before), then one that still does: at 60 bytes "a", "b" and "d" small do
# not begin one, large they do (test_the_examples_words_begin_chunks_as_they_say).
@example(
    before={0: {"a": _SMALL, "b": _LARGE, "d": _SMALL}},
    after=[(0, {"a": _SMALL, "b": _SMALL, "d": _SMALL})],
    chunk_bytes=60,
)
@example(
    before={0: {"a": _SMALL, "b": _LARGE, "d": _SMALL}},
    after=[(0, {"a": _SMALL, "b": _LARGE.replace("A", "B"), "d": _SMALL})],
    chunk_bytes=60,
)
def test_shared_chunks_made_again_where_terms_changed_are_a_fresh_builds(
    before: dict[int, dict[str, str]],
    after: list[tuple[int, dict[str, str] | None]],
    chunk_bytes: int,
) -> None:
    """Incremental equals full, for the shared term chunks: bundles' entries kept in the
    cache (SQLite), then some bundles' entries replaced or dropped; the chunks made again
    from the terms that changed (:func:`.shared.update_chunks`) are those a fresh build
    makes of the entries now, file for file, and only chunks a fresh build has are
    written."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        store = SearchStore(Path(folder))
        with store.term_entries() as kept:

            def put(number: int, entries: dict[str, str]) -> None:
                rows = ((bundle.js_order(t), t, e) for t, e in entries.items())
                kept.replace_bundle(number, f"v{number}", rows)

            for number, entries in before.items():
                put(number, entries)
            written: dict[str, bytes] = {}
            old = shared.update_chunks([], [], kept.rows_after, chunk_bytes, written.__setitem__)
            kept.save_chunks(old)
            now = dict(before)
            for number, entries in after:
                if entries is None:
                    now.pop(number, None)
                    kept.keep_bundles(set(now))
                else:
                    now[number] = entries
                    put(number, entries)
            rewritten: dict[str, bytes] = {}
            new = shared.update_chunks(
                kept.chunks(), kept.changed(), kept.rows_after, chunk_bytes, rewritten.__setitem__
            )
            kept.save_chunks(new)
            assert kept.changed() == [] and kept.chunks() == new
    fresh, files = shared_chunks({n: list(e.items()) for n, e in now.items()}, chunk_bytes)
    assert new == fresh
    assert all(files[name] == data for name, data in rewritten.items())
    assert set(files) <= set(rewritten) | set(written)


@pytest.mark.unit
def test_the_examples_words_begin_chunks_as_they_say() -> None:
    for term in "abd":
        small, large = (f'["{term}","",0,{e[1:]}' for e in (_SMALL, _LARGE))
        assert not shared.cut_before(term, len(small), 60)
        assert shared.cut_before(term, len(large), 60)


@pytest.mark.unit
def test_a_large_word_begins_its_chunk_and_its_aliases_stay_in_it() -> None:
    """A word of a chunk's bytes or more (a word of many turns) begins a chunk, so that the
    words just after it (its aliases, the longer words it begins) are in its chunk, and a
    prefix of it finds them in the chunk where it begins: when it ended its chunk, a prefix
    read the next chunk, often another large word's, for its aliases alone."""
    big = f'[3,"{"A" * 400}"]'
    entries = [
        ("build", '[1,"A"]'),
        ("by", '[1,"A"]'),
        ("cach", big),
        ("cache", '"cach"'),
        ("caches", '"cach"'),
        ("car", big),
        ("cars", '"car"'),
    ]
    chunks, files = shared_chunks({0: entries}, chunk_bytes=300)
    by_name = chunk_data(files)
    held = [[e[0] for e in by_name[c.name]] for c in chunks]
    assert held == [["build", "by"], ["cach", "cache", "caches"], ["car", "cars"]]
    # The client reads the chunk whose start sorts last at or before a word: "ca", "cac"
    # and "cach" begin in the chunk of cach and its aliases, and "cach" ends there.
    starts = shared.separators(chunks)
    assert starts == ["", "c", "car"]
    for prefix in ("ca", "cac", "cach", "cache"):
        assert max(i for i, s in enumerate(starts) if s <= prefix) == 1
    assert max(i for i, s in enumerate(starts) if s <= "cach\uffff") == 1


@pytest.mark.unit
def test_a_term_store_of_an_earlier_layout_is_started_afresh(tmp_path: Path) -> None:
    """``terms.sqlite`` as schema 2 left it (its chunks with a ``cut`` column, a bundle's
    entries kept) is started afresh by this version: no entry, bundle or chunk of it is
    read, and the store then keeps what it is given."""
    import sqlite3

    from publisher.site.search.store import TERMS_SCHEMA, TermEntries

    path = tmp_path / "terms.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE entries (key BLOB NOT NULL, bundle INTEGER NOT NULL, term TEXT NOT NULL,"
        " entry TEXT NOT NULL, PRIMARY KEY (key, bundle)) WITHOUT ROWID;"
        "CREATE TABLE bundles (bundle INTEGER PRIMARY KEY, version TEXT NOT NULL);"
        "CREATE TABLE changed (key BLOB PRIMARY KEY) WITHOUT ROWID;"
        "CREATE TABLE chunks (seq INTEGER PRIMARY KEY, first TEXT NOT NULL, last TEXT NOT NULL,"
        " name TEXT NOT NULL, digest TEXT NOT NULL, cut INTEGER NOT NULL);"
        "INSERT INTO entries VALUES (x'01', 0, 'old', '[1,\"A\"]');"
        "INSERT INTO bundles VALUES (0, 'v-old');"
        "INSERT INTO chunks VALUES (1, 'old', 'old', 't-old', 'd', 0);"
        "PRAGMA user_version = 2;"
    )
    con.close()
    assert TERMS_SCHEMA == 3
    with TermEntries(path) as store:
        assert store.kept_bundles() == set() and store.chunks() == []
        assert list(store.rows_after(None)) == []
        store.replace_bundle(1, "v1", [(bundle.js_order("new"), "new", '[1,"B"]')])
        store.save_chunks([ChunkRow("new", "new", "t-new", "d2")])
    with TermEntries(path) as store:
        assert store.version(1) == "v1" and store.chunks() == [
            ChunkRow("new", "new", "t-new", "d2")
        ]
        assert [row[2] for row in store.rows_after(None)] == ["new"]


@pytest.mark.unit
def test_two_shared_chunks_of_one_name_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shared term chunks are named by 60 bits of their content: two of one name (never
    seen) would be one file, so the build refuses them rather than publish a wrong index."""
    monkeypatch.setattr(shared, "content_name_of", lambda *a: "x" * shared.NAME)
    entries = [(bundle.js_order(t), 0, t, '[1,"A"]') for t in ("alpha", "beta", "gamma")]
    old = [ChunkRow("alpha", "alpha", "t-" + "x" * 12, "d1")]
    with pytest.raises(RuntimeError, match="two term chunks"):
        shared.update_chunks(
            [*old, ChunkRow("beta", "gamma", "t-" + "y" * 12, "d2")],
            [bundle.js_order("gamma")],
            lambda key: iter([e for e in entries if key is None or e[0] > key]),
            10**6,
            lambda name, data: None,
        )


@pytest.mark.unit
def test_a_bundle_spilled_in_sorted_runs_is_the_same(tmp_path: Path) -> None:
    """A bundle of more postings than a process holds at once (sorted runs in scratch files,
    merged) has the same bytes and term entries as one made in memory."""
    records = sorted(sample_records(), key=lambda r: r.slug)
    whole = bundle.bundle_files("b000-of-001", records, doc_bytes=500)
    version = whole.meta[len("m-") :]
    files: dict[str, bytes] = {}
    entries: list[tuple[bytes, str, str]] = []
    opened = []
    store = SearchStore(tmp_path / "search")

    def scratch() -> IO[bytes]:
        opened.append(store.scratch())
        return opened[-1]

    bundle.build_bundle(
        "b000-of-001",
        version,
        records,
        files.__setitem__,
        entries.extend,
        doc_bytes=500,
        scratch=scratch,
        run_bytes=5_000,
    )
    assert len(opened) > 3
    assert files == whole.files and [(t, e) for _, t, e in entries] == whole.terms
    assert all(key == bundle.js_order(t) for key, t, _ in entries)  # each with its sort key


def synthetic_records(count: int) -> Iterator[extract.SessionRecord]:
    """``count`` records made one at a time, each with words of its own (ids, as real logs
    hold) beside words many sessions share, so a bundle's vocabulary grows with it."""
    for i in range(count):
        shared = {f"word{(i * 7 + j) % 3000}": (1, "B") for j in range(60)}
        own = {f"id{i}x{j}": (2, "BCDE") for j in range(40)}
        yield extract.SessionRecord(
            name=f"ses_{i:06d}", slug=f"ses-{i:06d}", kind="main", role="", status="done",
            failures=i % 2, pages=[0], docs=['["turn-1",[["text","","x"]]]'],
            postings=shared | own, aliases={"running": "run"},
        )  # fmt: skip


@pytest.mark.unit
def test_a_bundle_holds_no_more_when_it_holds_four_times_the_sessions(tmp_path: Path) -> None:
    """Issue 30: the index build streams. What making a bundle allocates at its peak
    (tracemalloc) is flat from 150 sessions to 600 (100 words each, the postings spilled
    in sorted runs past the budget) and within 1.5 times the budget; made in memory, it grows
    with them."""
    store = SearchStore(tmp_path / "search")

    def peak(count: int, run_bytes: int) -> int:
        tracemalloc.start()
        try:
            bundle.build_bundle(
                "b000-of-001", "v", synthetic_records(count), lambda name, data: None,
                lambda entries: deque(entries, maxlen=0),
                doc_bytes=4000, scratch=store.scratch, run_bytes=run_bytes,
            )  # fmt: skip
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    peak(20, 300_000)  # what a first bundle allocates once (caches, imports) is not counted
    small, large = peak(150, 1_000_000), peak(600, 1_000_000)
    assert large <= 1.2 * small, (small, large)
    assert large < 1.5 * 1_000_000, large
    held_small, held_large = peak(150, 10**12), peak(600, 10**12)
    assert held_large > 3 * held_small, (held_small, held_large)


@pytest.mark.unit
def test_a_bundle_holds_at_most_a_thousand_sessions_to_the_archives_we_measure() -> None:
    """Issue 33: an append makes its session's bundle again, so a bundle of the default
    tunables holds no more sessions at 100,000 than at 2,000 (at most 1,000, up to 128,000
    sessions), nor more bytes of session files than a bundle may; past that, the count
    stays at its cap and bundles grow."""
    t = Tunables()

    def count(sessions: int, size: int = 0) -> int:
        return bundle.bundle_count(
            sessions, size, t.sessions_per_bundle, t.bundle_bytes, t.max_bundles
        )

    assert (count(2_000), count(20_000), count(100_000)) == (2, 32, 128)
    assert 100_000 / count(100_000) <= 2_000 / count(2_000) == 1_000
    for sessions in (1, 999, 1_000, 1_001, 64_001, 128_000):
        assert sessions / count(sessions) <= t.sessions_per_bundle
        size = sessions * 5_000_000  # long sessions: the bytes decide
        bundles = count(sessions, size)
        assert size / bundles <= t.bundle_bytes or bundles == t.max_bundles
    assert count(256_000) == t.max_bundles == 128  # the cap: 2,000 a bundle


@pytest.mark.site
def test_another_price_table_or_theme_writes_the_same_index(tmp_path: Path) -> None:
    """The search index is made of the sessions, the publisher and the redaction: a site
    built where another genai-prices is installed (or with ``--prices``), or with another
    theme, has the same index files, names and bytes (the demo site's test compares a fresh
    build with the committed one, wherever it is installed); the pages do change."""
    from publisher.usage import Prices, load_price_file

    folder = tmp_path / "sessions"
    shutil.copytree(SAMPLES, folder)
    usage = [{"model": "m-x", "input": 1000, "output": 200}]
    doc = session_doc(turns=[turn(1, part("user", "go"), part("text", "done"), usage=usage)])
    (folder / f"{doc['session_name']}.json").write_text(json.dumps(doc))
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"models": [{"model": "m-x", "input": 2, "output": 9}]}))
    sites = {
        "default": {},
        "prices": {"prices": Prices(load_price_file(table))},
        "theme": {"theme": "paper"},
    }
    for name, options in sites.items():
        build(folder, tmp_path / name, search=True, **options)

    def files(name: str, index: bool) -> dict[str, str]:
        digests = tree_digest(tmp_path / name).items()
        return {k: v for k, v in digests if k.startswith("search/") == index}

    assert len(files("default", index=True)) > 3
    assert files("prices", index=True) == files("default", index=True)
    assert files("theme", index=True) == files("default", index=True)
    assert files("prices", index=False) != files("default", index=False)
    assert files("theme", index=False) != files("default", index=False)


def small_sessions(tmp_path: Path, tag: str, count: int, word: str) -> tuple[Path, list[str]]:
    """A sessions folder of ``count`` one-turn sessions (``ses_..._<tag>NNN``) whose prompts
    name ``word``, and their names."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    names = [f"ses_20260101_0000{i:02d}_{tag}{i:03d}" for i in range(count)]
    for i, name in enumerate(names):
        turns = [turn(1, part("user", f"prompt {i} about {word}"), part("text", "answer"))]
        (sessions / f"{name}.json").write_text(json.dumps(session_doc(name, turns=turns)))
    return sessions, names


@pytest.mark.site
def test_an_append_writes_one_bundle_and_the_index_equals_a_fresh_one(tmp_path: Path) -> None:
    sessions, names = small_sessions(tmp_path, "bnd", 12, "oranges")
    small = Tunables(sessions_per_bundle=2, search_chunk_bytes=200)
    out = tmp_path / "site"
    first = build(sessions, out, search=True, tunables=small)
    assert first.search == "built 8/8 bundles", first.search
    assert build(sessions, out, search=True, tunables=small).search == "unchanged"
    before = tree_digest(out / "search")
    doc = json.loads((sessions / f"{names[3]}.json").read_text())
    doc["turns"].append(turn(2, part("user", "zqappended words")))
    (sessions / f"{names[3]}.json").write_text(json.dumps(doc))
    report = build(sessions, out, search=True, tunables=small)
    assert report.search == "built 1/8 bundles", report.search
    after = tree_digest(out / "search")
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    folders = {k.split("/")[0] for k in changed if "/" in k}
    assert len(folders - {"terms"}) == 1 and "index.js" in changed, changed
    # The shared term chunks rewritten: those of the appended turn's words (3 here).
    assert 1 <= len([k for k in changed if k.startswith("terms/")]) <= 2 * 3, changed
    fresh = tmp_path / "fresh"
    build(sessions, fresh, search=True, tunables=small)
    assert tree_digest(out) == tree_digest(fresh)
    # A lost record is made again from the session file; a lost state writes every bundle.
    store = SearchStore(cache_of(out).search)
    shutil.rmtree(store.records)
    store.state_file.unlink()
    assert build(sessions, out, search=True, tunables=small).search == "built 8/8 bundles"
    assert tree_digest(out) == tree_digest(fresh)
    # Lost or damaged term entries: the bundles are made again, the same chunks with them.
    store.terms_path.unlink()
    assert build(sessions, out, search=True, tunables=small).search == "built 8/8 bundles"
    assert tree_digest(out) == tree_digest(fresh)
    store.terms_path.write_bytes(b"not a database, " * 100)
    assert build(sessions, out, search=True, tunables=small).search == "built 8/8 bundles"
    assert tree_digest(out) == tree_digest(fresh)
    # A term chunk deleted from the site: all are made again.
    next((out / "search" / "terms").iterdir()).unlink()
    assert build(sessions, out, search=True, tunables=small).search == "unchanged"
    assert tree_digest(out) == tree_digest(fresh)
    # A damaged record (read as bytes for the version, unreadable as a record) is made again.
    for path in sorted(store.records.iterdir())[:3]:
        path.write_bytes(b'[2,"not a record"]\n{')
    store.state_file.unlink()
    assert build(sessions, out, search=True, tunables=small).search == "built 8/8 bundles"
    assert tree_digest(out) == tree_digest(fresh)
    # Search off removes the index and its cache; on again makes the same one.
    assert build(sessions, out, search=False, tunables=small).search == "off"
    assert not (out / "search").exists() and not store.root.exists()
    build(sessions, out, search=True, tunables=small)
    assert tree_digest(out) == tree_digest(fresh)


@pytest.mark.site
def test_a_session_rendered_again_with_the_same_record_does_not_write_its_bundle(
    tmp_path: Path,
) -> None:
    """An appended turn also renders the next run of its series again (its comparison page
    shows the appended run): that run's record is as it was, so its bundle is read, not
    written (at 100,000 sessions a bundle of 1,600 is about a second)."""
    from publisher.site.search.bundle import bundle_of
    from publisher.site.urls import row_slot

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    names = [f"job_20260101_0{i:02d}000_ser{i:03d}" for i in range(12)]
    for i, name in enumerate(names):
        when = f"2026-01-01T0{i // 10}:{i % 10}0:00+00:00"
        turns = [turn(1, part("user", f"nightly run {i} of pears"), part("text", "done"))]
        doc = session_doc(name, role="nightly", created_at=when, updated_at=when, turns=turns)
        (sessions / f"{name}.json").write_text(json.dumps(doc))
    small = Tunables(sessions_per_bundle=1, search_chunk_bytes=200)
    out = tmp_path / "site"
    occupied = len({bundle_of(row_slot(name), 16) for name in names})
    assert build(sessions, out, search=True, tunables=small).search == (
        f"built {occupied}/{occupied} bundles"
    )
    k = next(
        i for i in range(11)
        if bundle_of(row_slot(names[i]), 16) != bundle_of(row_slot(names[i + 1]), 16)
    )  # fmt: skip
    before = tree_digest(out / "search")
    doc = json.loads((sessions / f"{names[k]}.json").read_text())
    doc["turns"].append(turn(2, part("user", "zqappended words")))
    (sessions / f"{names[k]}.json").write_text(json.dumps(doc))
    report = build(sessions, out, search=True, tunables=small)
    assert report.sessions_rendered == 2, report  # the run appended to, and the next one
    assert report.search == f"built 1/{occupied} bundles", report.search
    after = tree_digest(out / "search")
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert {k.split("/")[0] for k in changed if "/" in k} - {"terms"} == {
        f"b{bundle_of(row_slot(names[k]), 16):03d}-of-016"
    }, changed
    fresh = tmp_path / "fresh"
    build(sessions, fresh, search=True, tunables=small)
    assert tree_digest(out) == tree_digest(fresh)
    # A page folder deleted by hand renders its session again: same record, no bundle
    # written, and a file left in its bundle's folder by an interrupted write is removed.
    shutil.rmtree(out / "sessions" / names[0])
    folder = out / "search" / f"b{bundle_of(row_slot(names[0]), 16):03d}-of-016"
    (folder / "t-0123456789ab-0.js").write_text("left by a build killed mid-write")
    report = build(sessions, out, search=True, tunables=small)
    assert report.sessions_rendered == 1 and report.search == "unchanged", report
    assert tree_digest(out) == tree_digest(fresh)
    # Its meta file gone: the bundle is made again.
    meta = next(folder.glob("m-*.js"))
    meta.unlink()
    shutil.rmtree(out / "sessions" / names[0])
    report = build(sessions, out, search=True, tunables=small)
    assert report.search == f"built 1/{occupied} bundles", report.search
    assert tree_digest(out) == tree_digest(fresh)


@pytest.mark.site
def test_records_of_sessions_no_longer_published_are_dropped(tmp_path: Path) -> None:
    """The records kept of sessions gone (their files removed; a record left before the
    cache's state was lost) are dropped once the bundles are written; the others stay."""
    sessions, names = small_sessions(tmp_path, "rec", 6, "plums")
    small = Tunables(sessions_per_bundle=2, search_chunk_bytes=200)
    out = tmp_path / "site"
    build(sessions, out, search=True, tunables=small)
    store = SearchStore(cache_of(out).search)
    assert sorted(store.record_slugs()) == names
    (sessions / f"{names[2]}.json").unlink()
    (sessions / f"{names[4]}.json").unlink()
    build(sessions, out, search=True, tunables=small)
    assert sorted(store.record_slugs()) == [n for n in names if n not in (names[2], names[4])]
    fresh = tmp_path / "fresh"
    build(sessions, fresh, search=True, tunables=small)
    assert tree_digest(out) == tree_digest(fresh)
    # A record left by a session gone before the cache's state was lost is dropped too.
    (store.records / "ses_20250101_000000_old001.json").write_bytes(b"[]")
    store.state_file.unlink()
    build(sessions, out, search=True, tunables=small)
    assert "ses_20250101_000000_old001" not in set(store.record_slugs())


@pytest.mark.site
def test_a_build_sends_each_bundle_with_its_sessions_only_when_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build holds a few bundles' sessions at a time (not the archive's): spooled as
    the stage plans, read back as each bundle is sent; a deferred index holds its own."""
    from publisher.site.stages import search as stage

    sessions, _ = small_sessions(tmp_path, "snd", 9, "figs")
    small = Tunables(sessions_per_bundle=2, search_chunk_bytes=200)
    held: list[int] = []
    spooled: list[list[tuple[str, str]]] = []
    real = stage.start_writing

    def start(work: stage.PendingSearch, *args: Any) -> stage.BundleWriting:
        held.append(sum(job.members is not None for job in work.jobs))
        assert work.members is not None and len(work.jobs) == 5
        read = work.members

        def members(index: int) -> list[tuple[str, str]]:
            spooled.append(read(index))
            return spooled[-1]

        work.members = members
        return real(work, *args)

    monkeypatch.setattr(stage, "start_writing", start)
    build(sessions, tmp_path / "site", search=True, tunables=small)
    assert held == [0]
    # Every published session once, each bundle's sessions by folder.
    assert sorted(folder for members in spooled for folder, _ in members) == sorted(
        p.stem for p in sessions.glob("*.json")
    )
    assert all(members == sorted(members) for members in spooled)
    monkeypatch.undo()
    report = build(sessions, tmp_path / "deferred", search=True, tunables=small, defer_search=True)
    assert report.pending_search is not None and report.pending_search.members is None
    assert all(job.members for job in report.pending_search.jobs)


@pytest.mark.site
def test_a_deferred_index_left_unwritten_is_written_by_the_next_build(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    shutil.copytree(SAMPLES, sessions)
    out = tmp_path / "site"
    report = build(sessions, out, search=True, defer_search=True)
    assert report.search == "pending" and not (out / "search").exists()
    # The watcher stopped before finishing: the next build writes what it left.
    assert build(sessions, out, search=True).search.startswith("built 1/1")
    fresh = tmp_path / "fresh"
    build(sessions, fresh, search=True)
    assert tree_digest(out) == tree_digest(fresh)


@pytest.mark.site
def test_planted_files_and_links_in_search_are_replaced(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(SAMPLES, out, search=True)
    expected = tree_digest(out)
    outside = tmp_path / "outside"
    outside.mkdir()
    (out / "search" / "stray.js").write_text("planted")
    (out / "search" / "b000-of-001" / "stray.js").write_text("planted")
    (out / "search" / "old-bundle").mkdir()
    (out / "pagefind").mkdir()
    (out / "pagefind" / "shards.json").write_text("{}")  # an earlier version's index
    store = SearchStore(cache_of(out).search)
    store.state_file.unlink()
    build(SAMPLES, out, search=True)
    assert tree_digest(out) == expected
    shutil.rmtree(out / "search")
    (out / "search").symlink_to(outside)
    store.state_file.unlink()
    build(SAMPLES, out, search=True)
    assert not (out / "search").is_symlink() and list(outside.iterdir()) == []
    assert tree_digest(out) == expected


def _failing_bundle(job: Any, *args: Any) -> Any:
    """:func:`_write_bundle`, failing for the bundle of the sessions named ``*par005``
    (run in a search worker)."""
    from publisher.site.stages import search as stage
    from publisher.write import WriteError

    if any(folder.endswith("par005") for folder, _ in job.members):
        raise WriteError(f"search/{job.ident}: cannot write (planted)")
    return stage.write_bundle_for_tests(job, *args)


@pytest.mark.site
def test_bundles_written_beside_the_archive_pages_are_those_written_after_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With two workers the bundles are written while the build makes the archive's pages
    (a thread feeds the workers): the site equals one process's, full and after an append;
    a bundle that fails fails the build (raised in the build's thread, after the pages),
    and the next build mends it."""
    from publisher.site.stages import search as stage
    from publisher.write import WriteError

    sessions, names = small_sessions(tmp_path, "par", 12, "pears")
    small = Tunables(sessions_per_bundle=2, search_chunk_bytes=200)
    out = tmp_path / "site"
    report = build(sessions, out, cache_dir=tmp_path / "c", search=True, tunables=small, workers=2)
    assert report.search == "built 6/6 bundles", report.search
    one = tmp_path / "one"
    build(sessions, one, search=True, tunables=small)
    assert tree_digest(out) == tree_digest(one)

    doc = json.loads((sessions / f"{names[5]}.json").read_text())
    doc["turns"].append(turn(2, part("user", "zqappended words")))
    (sessions / f"{names[5]}.json").write_text(json.dumps(doc))
    monkeypatch.setattr(stage, "write_bundle_for_tests", stage._write_bundle, raising=False)
    monkeypatch.setattr(stage, "_write_bundle", _failing_bundle)
    broken = tmp_path / "broken"
    with pytest.raises(WriteError, match="planted"):
        build(sessions, broken, cache_dir=tmp_path / "cb", search=True, tunables=small, workers=2)
    monkeypatch.undo()
    again = build(sessions, out, cache_dir=tmp_path / "c", search=True, tunables=small, workers=2)
    assert again.search == "built 1/6 bundles"
    build(sessions, tmp_path / "again", search=True, tunables=small)
    assert tree_digest(out) == tree_digest(tmp_path / "again")
    assert build(
        sessions, broken, cache_dir=tmp_path / "cb", search=True, tunables=small, workers=2
    ).search
    assert tree_digest(broken) == tree_digest(tmp_path / "again")


@pytest.mark.site
def test_a_deferred_index_written_by_workers_from_a_process_with_threads(tmp_path: Path) -> None:
    """``site watch`` writes the bundles it deferred from a process running threads (its
    observers, its server): the workers start from a clean server process, not forked, and
    the index equals a fresh build's."""
    import threading

    from publisher.site.build import finish_search

    sessions, _ = small_sessions(tmp_path, "dfw", 12, "plums")
    small = Tunables(sessions_per_bundle=2, search_chunk_bytes=200)
    out = tmp_path / "site"
    report = build(sessions, out, search=True, tunables=small, workers=2, defer_search=True)
    assert report.pending_search is not None and len(report.pending_search.jobs) > 2
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait, daemon=True)
    busy.start()
    try:
        assert finish_search(report.pending_search) == "built 6/6 bundles"
    finally:
        stop.set()
    build(sessions, tmp_path / "fresh", search=True, tunables=small)
    assert tree_digest(out) == tree_digest(tmp_path / "fresh")

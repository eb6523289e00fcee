"""Generate a synthetic Polyglav archive shaped like real agent logs.

The archive is deterministic from ``--seed``: session ``i`` depends only on the seed, ``i``
and ``--scale``, never on ``--sessions``, so the 200-session archive is exactly the first
200 files of the 2,000-session one (the sessions named by the size-independent
benchmark steps, the largest file and the longest session are the same in both).

Shape (measured totals and sizes in docs/benchmarks.md):

- about half interactive ``ses_`` sessions, a quarter ``sub_`` sessions, 15 % CI ``job_``
  runs and 5 % named sessions: a quarter of the interactive sessions delegate to 1-3
  sub-sessions (``parent_id`` set, usually listed in the parent's ``sub_sessions``, a
  tenth linked only through ``parent_id``, some nested one level deeper), and the
  delegating turn's output and answers name them as ``#id``;
- 2-30 turns per session, log-uniform (jobs 2-12, subs 1-10): a prompt (sometimes with a
  pasted log), thinking, 0-3 tool calls whose outputs are 1-50 KB, log-uniform (pytest
  logs, shell listings, build logs with ANSI colours, git logs and diffs, file contents
  with Python/TypeScript/Rust code, grep hits, JSON, search results), and a Markdown answer
  (headings, lists, code fences, tables, links); turn statuses (ok, error, truncated,
  cancelled, empty, a last turn still running), ``/model`` and ``/compact`` records,
  system notes, permissions for most tool calls, errors in 15 % of the sessions;
- per 100 sessions, two files that do not load (index 13: truncated JSON, as while being
  written; index 67: the legacy flat-messages format or the pre-rename ``name``/``id``
  fields);
- per 200 sessions, one long session of 1,000-3,000 turns (index 50 of each 200; the
  first has 4,000 turns and is the largest file, 15 MB) and one session with a single
  tool output of 2-8 MB (index 73 of each 200; the first has 8 MB).

``--scale`` multiplies turn counts and output sizes (``--scale 0.05`` for a smoke run).

``--shape output`` (issue 13's output-heavy archive): the same plan of names, delegations
and unloadable files, but every loadable session is 15-60 turns (log-uniform) of 3-8 tool
calls whose outputs are 1-50 KB (log-uniform; shell, test and build logs, source files,
diffs, grep hits, JSON), with no long or several-MB session: 200 sessions are about
432 MB, 91 % of the file bytes (95 % of the text) tool output.

Usage::

    python benchmarks/generate.py --sessions 200 [--scale 1] [--seed 1] [--out DIR]
    python benchmarks/generate.py --shape output --sessions 200
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import hashlib
import json
import math
import random
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ARCHIVES = HERE / "_archives"
SHAPES = ("mixed", "output")
"""``mixed``: many sessions of every kind (issue 4); ``output``: tool output is most bytes."""
FORMAT = 1
"""Bump when the generated content changes, so cached archives are regenerated."""

BASE_TIME = dt.datetime(2026, 1, 5, 8, 0, 0, tzinfo=dt.UTC)
B36 = "0123456789abcdefghijklmnopqrstuvwxyz"

LONG_AT = 50
"""Index (mod 200) of the long session of each hundred."""
HUGE_AT = 73
"""Index (mod 200) of the session with a several-MB tool output."""
TRUNCATED_AT = 13
"""Index (mod 100) of a truncated file (does not load)."""
LEGACY_AT = 67
"""Index (mod 100) of a legacy-format file (does not load)."""

Json = dict[str, Any]

# --------------------------------------------------------------------------------------
# Vocabulary and pools (built once per seed; sessions pick from them).

WORDS_TEXT = (
    "the a an of to in for on with from by at as is are was be this that it we they "
    "when then if else not only also each every all some any more less first last next "
    "request response handler service client server cache queue worker job task retry "
    "timeout latency throughput buffer stream socket connection pool thread process lock "
    "mutex deadlock race condition invariant assertion fixture mock stub snapshot golden "
    "parser lexer token grammar schema migration index table column row query planner "
    "transaction commit rollback replica shard partition leader follower election quorum "
    "config option flag default override environment variable secret token credential "
    "build compile link bundle release version tag branch merge rebase conflict diff patch "
    "test suite case failure error warning exception traceback stack frame module package "
    "function method class struct trait interface generic closure iterator generator async "
    "await future promise callback event loop scheduler signal handler hook plugin "
    "endpoint route middleware controller view template render layout component state "
    "reservation inventory order invoice payment customer account user session profile "
    "metric counter gauge histogram trace span log level debug info warn fatal "
    "memory allocation leak garbage collector heap pointer reference ownership borrow "
    "file path directory folder archive manifest checksum hash digest signature key "
    "upstream downstream dependency lockfile resolver registry mirror proxy gateway "
    "refactor rename extract inline simplify remove deprecate document explain verify "
    "quickly carefully safely correctly incrementally atomically eventually rarely "
    "broken flaky slow stale missing duplicate invalid unexpected unused redundant"
)
WORDS = WORDS_TEXT.split()

IDENTS_TEXT = (
    "reserve release restock available reserved item sku qty stock order_id user_id "
    "handle_request parse_args load_config read_manifest write_atomic build_index "
    "render_page compute_digest retry_with_backoff open_connection close_pool "
    "validate_payload serialize deserialize normalize_path resolve_ref flush_buffer "
    "schedule_job cancel_job poll_status emit_event subscribe unsubscribe dispatch "
    "ReservationService InventoryRepo OrderController PaymentGateway SessionStore "
    "BuildCache IndexWriter PageRenderer ConfigLoader EventBus RetryPolicy RateLimiter"
)
IDENTS = IDENTS_TEXT.split()

TOOLS_WEIGHTED: list[tuple[str, float]] = [
    ("run_command", 0.34),
    ("file_read", 0.26),
    ("grep", 0.12),
    ("file_write", 0.08),
    ("edit", 0.08),
    ("web_search", 0.05),
    ("list_dir", 0.04),
    ("http_get", 0.03),
]

MODELS = [
    ("qwen2.5-coder:32b", "ollama"),
    ("llama3.3:70b", "ollama"),
    ("gpt-4.1", "openai"),
    ("claude-sonnet-4", "anthropic"),
    ("deepseek-r1:32b", "ollama"),
]
ROLES = ["", "", "", "builder", "reviewer", "security", "writer", "tester", "nightly-ci"]
PROJECTS = ["inventory-api", "billing-core", "web-frontend", "data-pipeline", "polyglav"]


def _sentence(rng: random.Random) -> str:
    n = rng.randint(7, 22)
    words = [rng.choice(WORDS) for _ in range(n)]
    if rng.random() < 0.5:
        words[rng.randrange(n)] = f"`{rng.choice(IDENTS)}`"
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice([".", ".", ".", "?", ":"])


def _code_line(rng: random.Random, lang: str) -> str:
    ident, other = rng.choice(IDENTS), rng.choice(IDENTS)
    num = rng.randint(0, 4096)
    if lang == "py":
        return rng.choice(
            [
                f"def {ident}(self, {other}: int = {num}) -> bool:",
                f"    {ident} = self.{other}.get({num})",
                f"    if {ident} is None or {other} > {num}:",
                f'        raise ValueError(f"{ident} out of range: {{{other}}}")',
                f"    return [{other} for {other} in {ident} if {other}]",
                f"class {ident.title().replace('_', '')}({other.title().replace('_', '')}):",
                f'    """{_words(rng, 8)}."""',
                f"from .{ident} import {other}",
                f"    for i, {ident} in enumerate(self.{other}):",
                f'        log.debug("{ident} %s", {other})',
                "",
                f"    # {_words(rng, 10)}",
                f"    assert {ident} == {num}, {other}",
            ]
        )
    if lang == "ts":
        return rng.choice(
            [
                f"export function {ident}({other}: number = {num}): boolean {{",
                f"  const {ident} = await this.{other}.get({num});",
                f"  if (!{ident} || {other} > {num}) throw new Error(`{ident}: ${{{other}}}`);",
                f"  return {ident}.filter((x) => x.{other} !== undefined);",
                "}",
                f"import {{ {ident} }} from './{other}';",
                f"  // {_words(rng, 9)}",
                "",
                f"interface {ident.title().replace('_', '')} {{ {other}: string; n: {num} }}",
            ]
        )
    return rng.choice(
        [
            f"pub fn {ident}(&self, {other}: u32) -> Result<(), Error> {{",
            f"    let {ident} = self.{other}.get({num}).ok_or(Error::Missing)?;",
            f"    if {ident}.len() > {num} {{ return Err(Error::TooLong); }}",
            f"    Ok(self.{other}.insert({ident}))",
            "}",
            f"use crate::{ident}::{other};",
            f"    // {_words(rng, 9)}",
            "",
            f"impl {ident.title().replace('_', '')} for {other.title().replace('_', '')} {{",
        ]
    )


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


@dataclass(slots=True)
class Pools:
    """Pre-generated lines; outputs are assembled by picking from them (fast, varied)."""

    sentences: list[str]
    code: dict[str, list[str]]
    pytest: list[str]
    shell: list[str]
    build: list[str]
    grep: list[str]
    diff: list[str]
    json_lines: list[str]

    @classmethod
    @functools.cache
    def make(cls, seed: int) -> Pools:
        rng = random.Random(f"pools:{seed}")
        files = [
            f"{rng.choice(['app', 'src', 'lib', 'tests', 'pkg'])}/{rng.choice(IDENTS).lower()}"
            f".{rng.choice(['py', 'ts', 'rs'])}"
            for _ in range(300)
        ]
        pytest_lines = []
        for _ in range(3000):
            f = rng.choice(files).replace("app/", "tests/test_")
            kind = rng.random()
            if kind < 0.45:
                dots = "".join(rng.choice("......F.s") for _ in range(rng.randint(5, 50)))
                pytest_lines.append(f"{f} {dots:<52} [{rng.randint(1, 100):>3}%]")
            elif kind < 0.7:
                pytest_lines.append(
                    f"{f}::test_{rng.choice(IDENTS).lower()}_{rng.randint(1, 99)} "
                    f"{rng.choice(['PASSED', 'PASSED', 'PASSED', 'FAILED', 'SKIPPED'])}"
                    f" [{rng.randint(1, 100):>3}%]"
                )
            elif kind < 0.85:
                pytest_lines.append(f"E       {_sentence(rng)}")
            else:
                pytest_lines.append(f"{f}:{rng.randint(1, 900)}: in {rng.choice(IDENTS)}")
        shell = []
        for _ in range(3000):
            kind = rng.random()
            if kind < 0.35:
                shell.append(
                    f"-rw-r--r--  1 dana staff {rng.randint(80, 99999):>6} Aug {rng.randint(1, 28):>2} "
                    f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {rng.choice(files)}"
                )
            elif kind < 0.6:
                h = f"{rng.getrandbits(160):040x}"
                shell.append(
                    f"commit {h}\nAuthor: Dana <dana@example.org>\n\n    {_sentence(rng)}\n"
                )
            else:
                shell.append(_sentence(rng))
        build = []
        for _ in range(3000):
            kind = rng.random()
            f = rng.choice(files)
            if kind < 0.4:
                build.append(
                    f"   Compiling {rng.choice(IDENTS).lower()} v0.{rng.randint(1, 30)}.{rng.randint(0, 9)}"
                )
            elif kind < 0.7:
                build.append(
                    f"warning: unused variable `{rng.choice(IDENTS)}`\n  --> {f}:{rng.randint(1, 900)}:"
                    f"{rng.randint(1, 80)}\n   |"
                )
            elif kind < 0.85:
                build.append(
                    f"[{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}]"
                    f" \x1b[32mINFO\x1b[0m {_sentence(rng)}"
                )
            else:
                build.append(
                    f"npm warn deprecated {rng.choice(IDENTS).lower()}@{rng.randint(1, 9)}.0.0: {_sentence(rng)}"
                )
        grep = [
            f"{rng.choice(files)}:{rng.randint(1, 2000)}:{_code_line(rng, rng.choice(['py', 'ts', 'rs']))}"
            for _ in range(3000)
        ]
        diff = []
        for _ in range(3000):
            lang = rng.choice(["py", "ts", "rs"])
            kind = rng.random()
            if kind < 0.05:
                f = rng.choice(files)
                diff.append(f"diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}")
            elif kind < 0.12:
                a, b = rng.randint(1, 900), rng.randint(1, 40)
                diff.append(f"@@ -{a},{b} +{a},{b + rng.randint(-3, 3)} @@")
            else:
                diff.append(rng.choice(" +-  ") + _code_line(rng, lang))
        json_lines = []
        for _ in range(2000):
            k, v = (
                rng.choice(IDENTS),
                rng.choice(
                    [str(rng.randint(0, 10**6)), json.dumps(_sentence(rng)), "true", "null", "[]"]
                ),
            )
            json_lines.append(f'{" " * rng.choice([2, 4, 6])}"{k}": {v},')
        return cls(
            sentences=[_sentence(rng) for _ in range(6000)],
            code={
                lang: [_code_line(rng, lang) for _ in range(4000)] for lang in ("py", "ts", "rs")
            },
            pytest=pytest_lines,
            shell=shell,
            build=build,
            grep=grep,
            diff=diff,
            json_lines=json_lines,
        )


def _fill(
    rng: random.Random, pool: list[str], size: int, header: str = "", footer: str = ""
) -> str:
    """Lines picked from ``pool`` until about ``size`` characters, with unique stamps."""
    lines = [header] if header else []
    total = len(header)
    while total < size:
        chunk = rng.choices(pool, k=32)
        chunk.append(f"# {rng.getrandbits(64):016x} {rng.randint(0, 10**9)}")
        lines.extend(chunk)
        total += sum(len(x) + 1 for x in chunk)
    if footer:
        lines.append(footer)
    text = "\n".join(lines)
    return text[: max(size, len(header) + len(footer) + 1)] + "\n"


# --------------------------------------------------------------------------------------
# Session plan (sequential and independent of the archive size).


@dataclass(slots=True)
class Planned:
    index: int
    kind: str
    """ses, job, sub, named, long, huge, truncated, legacy."""
    name: str = ""
    session_id: str = ""
    parent: str = ""
    subs: list[str] = field(default_factory=list)
    hidden_subs: set[str] = field(default_factory=set)
    """Subs linked only through their parent_id (not in the parent's sub_sessions)."""
    role: str = ""
    created: dt.datetime = BASE_TIME


def _ident(seed: int, index: int) -> str:
    digest = int.from_bytes(hashlib.sha256(f"id:{seed}:{index}".encode()).digest()[:8], "big")
    return "".join(B36[(digest >> (6 * k)) % 36] for k in range(6))


def plan_archive(count: int, seed: int) -> list[Planned]:
    """The first ``count`` sessions of the (infinite) plan for ``seed``."""
    rng = random.Random(f"plan:{seed}")
    plan: list[Planned] = []
    pending: list[tuple[Planned, int]] = []  # (parent, depth)
    clock = BASE_TIME
    for i in range(count):
        clock += dt.timedelta(minutes=rng.randint(3, 90), seconds=rng.randint(0, 59))
        ident = _ident(seed, i)
        stamp = clock.strftime("%Y%m%d_%H%M%S")
        mod = i % 100
        p = Planned(index=i, kind="ses", created=clock)
        if i % 200 == LONG_AT:
            p.kind = "long"
        elif i % 200 == HUGE_AT:
            p.kind = "huge"
        elif mod == TRUNCATED_AT:
            p.kind = "truncated"
        elif mod == LEGACY_AT:
            p.kind = "legacy"
        elif pending:
            parent, depth = pending.pop(0)
            p.kind = "sub"
            p.parent = parent.name
            p.role = rng.choice(["reviewer", "security", "tester", "writer", "researcher"])
            parent.subs.append(f"sub_{stamp}_{ident}")
            if rng.random() < 0.1:
                parent.hidden_subs.add(f"sub_{stamp}_{ident}")
            if depth < 2 and rng.random() < 0.12:
                pending.append((p, depth + 1))
        else:
            r = rng.random()
            p.kind = "ses" if r < 0.72 else "job" if r < 0.94 else "named"
        if p.kind in ("ses", "long", "huge", "truncated"):
            p.name, p.session_id = f"ses_{stamp}_{ident}", ident
        elif p.kind == "job":
            p.name, p.session_id = f"job_{stamp}_{ident}", ident
            p.role = rng.choice(["nightly-ci", "release", "deps-bot", "lint-fix"])
        elif p.kind == "sub":
            p.name, p.session_id = f"sub_{stamp}_{ident}", ident
        elif p.kind == "named":
            p.name = f"{rng.choice(['release-notes', 'design', 'triage', 'onboarding'])}-{i}"
            p.role = rng.choice(["writer", "", "builder"])
        else:  # legacy
            p.name, p.session_id = f"ses_{stamp}_{ident}", ident
        if p.kind == "ses" and not p.role:
            p.role = rng.choice(ROLES)
        if p.kind == "ses" and rng.random() < 0.25:
            for _ in range(rng.randint(1, 3)):
                pending.append((p, 1))
        plan.append(p)
    return plan


# --------------------------------------------------------------------------------------
# Content.


def _iso(t: dt.datetime) -> str:
    return t.isoformat(timespec="seconds")


class SessionWriter:
    """Builds one session document from its plan entry."""

    def __init__(
        self,
        pools: Pools,
        planned: Planned,
        seed: int,
        scale: float,
        names: dict[str, str],
        shape: str = "mixed",
    ):
        self.pools = pools
        self.shape = shape
        self.p = planned
        self.rng = random.Random(f"session:{seed}:{planned.index}")
        self.scale = scale
        self.names = names
        """Session name → id of every session of the archive (for ``#id`` references)."""
        self.clock = planned.created
        self.permissions: list[Json] = []
        self.project = self.rng.choice(PROJECTS)
        self.model, self.provider = self.rng.choice(MODELS)
        self.sub_queue = list(planned.subs)

    # -- small pieces --------------------------------------------------------------------

    def tick(self, lo: int = 1, hi: int = 30) -> str:
        self.clock += dt.timedelta(seconds=self.rng.randint(lo, hi))
        return _iso(self.clock)

    def prose(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choices(self.pools.sentences, k=self.rng.randint(lo, hi)))

    def out_size(self, lo: int = 1024, hi: int = 50 * 1024) -> int:
        """Log-uniform size in [lo, hi], scaled."""
        size = math.exp(self.rng.uniform(math.log(lo), math.log(hi)))
        return max(120, int(size * self.scale))

    def code_block(self, lines: int) -> tuple[str, str]:
        lang = self.rng.choice(["py", "ts", "rs"])
        body = "\n".join(self.rng.choices(self.pools.code[lang], k=lines))
        return {"py": "python", "ts": "typescript", "rs": "rust"}[lang], body

    def answer(self) -> str:
        rng = self.rng
        out: list[str] = []
        if rng.random() < 0.5:
            out.append(f"## {_words(rng, rng.randint(2, 6)).capitalize()}")
        out.append(self.prose(1, 4))
        if rng.random() < 0.6:
            out.append(
                "\n".join(f"- {s}" for s in rng.choices(self.pools.sentences, k=rng.randint(2, 6)))
            )
        if rng.random() < 0.5:
            lang, body = self.code_block(rng.randint(3, 30))
            out.append(f"```{lang}\n{body}\n```")
        if rng.random() < 0.25:
            rows = [
                f"| `{rng.choice(IDENTS)}` | {rng.randint(0, 999)} | {_words(rng, 4)} |"
                for _ in range(rng.randint(2, 8))
            ]
            out.append("| name | count | note |\n|---|---:|---|\n" + "\n".join(rows))
        if rng.random() < 0.3:
            out.append(
                "\n".join(
                    f"{k}. {s}" for k, s in enumerate(rng.choices(self.pools.sentences, k=3), 1)
                )
            )
        if self.p.subs and rng.random() < 0.3:
            sub = rng.choice(self.p.subs)
            out.append(f"The review is in #{self.names.get(sub, 'zzzzzz')} ({sub}).")
        if rng.random() < 0.05:
            out.append(
                f"See session:{rng.choice(['release-notes', 'design'])}-{rng.randint(0, 99)} and <https://example.org/{rng.choice(IDENTS)}>."
            )
        return "\n\n".join(out)

    def permission(self, tool: str, path: str) -> None:
        r = self.rng.random()
        action, decision = (
            ("allow", "granted")
            if r < 0.55
            else ("ask", "granted")
            if r < 0.85
            else ("ask", "declined")
            if r < 0.93
            else ("deny", "denied")
        )
        self.permissions.append(
            {
                "tool": tool,
                "action": action,
                "decision": decision,
                "path": path,
                "timestamp": _iso(self.clock),
            }
        )

    # -- tool calls --------------------------------------------------------------------

    def tool(self, size: int | None = None, name: str | None = None) -> Json:
        rng = self.rng
        # The output shape writes no files (a write's input is its content, not output).
        weighted = [tw for tw in TOOLS_WEIGHTED if self.shape != "output" or tw[0] != "file_write"]
        name = name or rng.choices([t for t, _ in weighted], [w for _, w in weighted])[0]
        size = size if size is not None else self.out_size()
        pools = self.pools
        cwd = f"/home/dana/src/{self.project}"
        is_error = False
        inp: Json
        if name == "run_command":
            kind = rng.random()
            if kind < 0.4:
                inp = {"command": f"pytest -q tests/{rng.choice(IDENTS).lower()}", "cwd": cwd}
                failed = rng.random() < 0.3
                is_error = failed
                out = _fill(
                    rng,
                    pools.pytest,
                    size,
                    "============================= test session starts ==============================\n"
                    "platform linux -- Python 3.12.4, pytest-8.3.2, pluggy-1.5.0",
                    f"========================= {rng.randint(0, 5) if failed else 0} failed, "
                    f"{rng.randint(10, 900)} passed in {rng.uniform(0.5, 90):.2f}s =========================",
                )
            elif kind < 0.65:
                inp = {
                    "command": rng.choice(
                        ["cargo build --release", "npm run build", "make -j4", "tsc -p ."]
                    ),
                    "cwd": cwd,
                }
                out = _fill(rng, pools.build, size)
                is_error = rng.random() < 0.1
            elif kind < 0.85:
                inp = {"command": rng.choice(["git log -n 50", "ls -la", "git status"]), "cwd": cwd}
                out = _fill(rng, pools.shell, size)
            else:
                inp = {"command": "git diff", "cwd": cwd}
                out = _fill(rng, pools.diff, size)
            path = cwd
        elif name == "file_read":
            lang = rng.choice(["py", "ts", "rs"])
            path = f"{cwd}/src/{rng.choice(IDENTS).lower()}.{lang}"
            inp = {"path": path}
            out = _fill(rng, pools.code[lang], size)
        elif name == "grep":
            inp = {"pattern": rng.choice(IDENTS), "path": cwd}
            out = _fill(rng, pools.grep, size)
            path = cwd
        elif name == "file_write":
            lang, body = self.code_block(rng.randint(10, 120))
            path = f"{cwd}/src/{rng.choice(IDENTS).lower()}.{lang[:2]}"
            inp = {"path": path, "content": body}
            out = f"wrote {len(body.encode())} bytes to {path}"
        elif name == "edit":
            path = f"{cwd}/src/{rng.choice(IDENTS).lower()}.py"
            inp = {
                "path": path,
                "old": "\n".join(rng.choices(pools.code["py"], k=rng.randint(1, 8))),
                "new": "\n".join(rng.choices(pools.code["py"], k=rng.randint(1, 8))),
            }
            out = _fill(rng, pools.diff, min(size, 6000))
            is_error = rng.random() < 0.05
        elif name == "web_search":
            q = _words(rng, rng.randint(3, 7))
            inp = {"query": q}
            path = ""
            out = "\n\n".join(
                f"{k}. [{_words(rng, 5)}](https://example.org/{rng.choice(IDENTS)}/{k})\n   {self.prose(1, 3)}"
                for k in range(1, max(2, size // 400))
            )
        elif name == "http_get":
            path = f"https://api.example.org/v1/{rng.choice(IDENTS).lower()}"
            inp = {"url": path}
            out = "{\n" + _fill(rng, pools.json_lines, size).rstrip(",\n") + "\n}\n"
        else:  # list_dir
            inp = {"path": cwd}
            path = cwd
            out = _fill(rng, pools.shell[:1200], size)
        if rng.random() < 0.03:
            is_error = True
            out = f"Error: {self.prose(1, 2)}"
        if rng.random() < 0.6:
            self.permission(name, path)
        part: Json = {
            "type": "tool",
            "name": name,
            "input": inp,
            "output": out,
            "is_error": is_error,
            "timestamp": self.tick(1, 20),
        }
        if rng.random() < 0.4:
            part["analysis"] = _sentence(rng)
        return part

    def delegate(self) -> Json:
        sub = self.sub_queue.pop(0)
        ident = self.names.get(sub, "")
        self.permission("delegate", "reviewer")
        return {
            "type": "tool",
            "name": "delegate",
            "input": {"role": "reviewer", "task": self.prose(1, 2)},
            "output": f"Sub-agent {sub} (#{ident}) finished: {self.prose(1, 3)}",
            "is_error": False,
            "timestamp": self.tick(30, 300),
        }

    # -- turns ---------------------------------------------------------------------------

    def turn(
        self, index: int, tools: tuple[int, int], size: tuple[int, int], huge: int = 0
    ) -> Json:
        rng = self.rng
        started = self.tick(20, 600)
        parts: list[Json] = []
        if rng.random() < 0.1:
            parts.append(
                {
                    "type": "system",
                    "text": f"web_search: true auto-search context. {self.prose(1, 2)}",
                    "timestamp": started,
                }
            )
        prompt = self.prose(1, 4)
        if rng.random() < 0.1:
            prompt += (
                "\n\n```\n"
                + "\n".join(rng.choices(self.pools.pytest, k=rng.randint(3, 20)))
                + "\n```"
            )
        parts.append({"type": "user", "text": prompt, "timestamp": started})
        if rng.random() < 0.75:
            parts.append({"type": "thinking", "text": self.prose(1, 8), "timestamp": self.tick()})
        for _ in range(rng.randint(*tools)):
            parts.append(self.tool(self.out_size(*size)))
            if rng.random() < 0.3:
                parts.append(
                    {"type": "thinking", "text": self.prose(1, 3), "timestamp": self.tick()}
                )
        if huge:
            parts.append(self.tool(huge, name="run_command"))
        if self.sub_queue and rng.random() < 0.5:
            parts.append(self.delegate())
        status = rng.choices(["ok", "error", "truncated", "cancelled", "empty"], [90, 3, 2, 4, 1])[
            0
        ]
        if status != "empty":
            parts.append({"type": "text", "text": self.answer(), "timestamp": self.tick()})
        return {
            "index": index,
            "started_at": started,
            "ended_at": self.tick(),
            "status": status,
            "model": self.model,
            "provider": self.provider,
            "mode": rng.choice(["build", "build", "build", "plan"]),
            "reasoning": rng.choice([False, "off", "low", "medium", "high"]),
            "parts": parts,
        }

    def command_turn(self, index: int, compact_from: int | None) -> Json:
        started = self.tick()
        if compact_from is None:
            part: Json = {
                "type": "command",
                "text": f"/model {self.rng.choice(MODELS)[0]}",
                "timestamp": started,
            }
        else:
            part = {
                "type": "command",
                "text": "/compact",
                "summary": self.prose(3, 10),
                "compact_from": compact_from,
                "timestamp": started,
            }
        return {
            "index": index,
            "started_at": started,
            "ended_at": self.tick(0, 3),
            "status": "ok",
            "model": self.model,
            "provider": self.provider,
            "mode": "build",
            "reasoning": "off",
            "parts": [part],
        }

    def document(self) -> Json:
        p, rng = self.p, self.rng
        huge_at = -1
        tools, size = (0, 3), (1024, 50 * 1024)
        if self.shape == "output":
            tools = (3, 8)
            count = int(math.exp(rng.uniform(math.log(15), math.log(61))))
        elif p.kind == "long":
            count = 4000 if p.index == LONG_AT else rng.randint(1000, 3000)
            tools, size = (0, 1), (300, 8 * 1024)
        elif p.kind == "job":
            count = rng.randint(2, 12)
        elif p.kind == "sub":
            count = rng.randint(1, 10)
        else:
            count = int(math.exp(rng.uniform(math.log(2), math.log(31))))  # skewed: most are short
        count = (
            max(1, round(count * self.scale))
            if p.kind != "long" or self.shape == "output"
            else max(20, round(count * self.scale))
        )
        if p.kind == "huge" and self.shape != "output":
            huge_at = rng.randrange(count)
            megabytes = 8 if p.index == HUGE_AT else rng.uniform(2, 8)
            huge_size = max(2000, int(megabytes * 1024 * 1024 * self.scale))
        turns: list[Json] = []
        compact_at = rng.randint(count // 2, count) if count > 30 else -1
        for i in range(1, count + 1):
            if i == compact_at:
                turns.append(self.command_turn(i, max(1, i - 4)))
            elif rng.random() < 0.02:
                turns.append(self.command_turn(i, None))
            else:
                turns.append(self.turn(i, tools, size, huge_size if i - 1 == huge_at else 0))
        while self.sub_queue:  # every declared sub is delegated somewhere
            turns[-1]["parts"].insert(-1, self.delegate())
        if rng.random() < 0.05 and turns:
            last = turns[-1]
            last["status"] = "running"
            for part in last["parts"]:
                if part["type"] == "tool":
                    part["output"] = None
        errors = []
        if rng.random() < 0.15:
            for _ in range(rng.randint(1, 3)):
                code, message = rng.choice(
                    [
                        (401, "Unauthorized: the provider rejected the API key (token expired)"),
                        (429, "Too Many Requests: rate limited, retrying in 20s"),
                        (500, "Internal Server Error from the provider"),
                        (0, "stream EOF before the completion finished"),
                        (0, "max_tokens truncation: the answer hit max_tokens (4096)"),
                    ]
                )
                errors.append({"code": code, "message": message, "timestamp": self.tick()})
        return {
            "created_at": _iso(p.created),
            "errors": errors,
            "parent_id": p.parent,
            "permissions": self.permissions,
            "role": p.role,
            "session_id": p.session_id,
            "session_name": p.name,
            "sub_sessions": [s for s in p.subs if s in self.names and s not in p.hidden_subs],
            "turns": turns,
            "updated_at": _iso(self.clock),
            "version": rng.choice(["0.34.2", "0.35.0", "0.35.1"]),
        }


def render_file(
    pools: Pools,
    planned: Planned,
    seed: int,
    scale: float,
    names: dict[str, str],
    shape: str = "mixed",
) -> bytes:
    """The bytes of one session file (including the ones that do not load)."""
    if planned.kind == "legacy":
        if (planned.index // 100) % 2 == 0:
            doc: Json = {
                "name": planned.name,
                "created_at": _iso(planned.created),
                "messages": [
                    {"role": "user", "content": "List the endpoints."},
                    {"role": "assistant", "content": "GET /items"},
                ],
            }
        else:
            doc = {
                "created_at": _iso(planned.created),
                "errors": [],
                "id": planned.session_id,
                "name": planned.name,
                "permissions": [],
                "turns": [],
                "updated_at": _iso(planned.created),
            }
        return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()
    doc = SessionWriter(pools, planned, seed, scale, names, shape).document()
    data = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()
    if planned.kind == "truncated":
        data = data[: int(len(data) * 0.6)]
    return data


# --------------------------------------------------------------------------------------
# Archive.


def archive_dir(sessions: int, scale: float, seed: int, shape: str = "mixed") -> Path:
    """Default location: ``benchmarks/_archives/[output-]n<sessions>-x<scale>-s<seed>/``."""
    prefix = "" if shape == "mixed" else f"{shape}-"
    return ARCHIVES / f"{prefix}n{sessions}-x{scale:g}-s{seed}"


def generate(
    sessions: int,
    scale: float = 1.0,
    seed: int = 1,
    out: Path | None = None,
    log: Callable[[str], None] | None = None,
    shape: str = "mixed",
) -> Path:
    """Write the archive (``<out>/sessions/*.json`` and ``<out>/shape.json``); returns ``out``.

    An archive already generated with the same parameters is kept as it is.
    """
    out = out or archive_dir(sessions, scale, seed, shape)
    params: dict[str, Any] = {"format": FORMAT, "sessions": sessions, "scale": scale, "seed": seed}
    if shape != "mixed":
        params["shape"] = shape
        params["shape_format"] = 2  # bump when the output shape's content changes
    shape_path = out / "shape.json"
    if shape_path.is_file():
        with_params = json.loads(shape_path.read_text())
        if with_params.get("params") == params:
            return out
    folder = out / "sessions"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    started = time.perf_counter()
    pools = Pools.make(seed)
    plan = plan_archive(sessions, seed)
    names = {p.name: p.session_id for p in plan}
    sizes: dict[str, int] = {}
    kinds: dict[str, int] = {}
    turn_counts: list[int] = []
    output_bytes = 0
    for k, planned in enumerate(plan):
        data = render_file(pools, planned, seed, scale, names, shape)
        (folder / f"{planned.name}.json").write_bytes(data)
        sizes[planned.name] = len(data)
        kinds[planned.kind] = kinds.get(planned.kind, 0) + 1
        if log and (k + 1) % 100 == 0:
            log(f"generated {k + 1}/{sessions} sessions ({sum(sizes.values()) / 1e6:.0f} MB)")
    for planned in plan:
        if planned.kind not in ("truncated", "legacy"):
            # Count turns cheaply from the written file's structure.
            turns, outputs = _count_turns(folder / f"{planned.name}.json")
            turn_counts.append(turns)
            output_bytes += outputs
    ordered = sorted(sizes.values())
    largest = max(sizes, key=lambda n: sizes[n])
    summary = {
        "params": params,
        "files": len(sizes),
        "bytes": sum(ordered),
        "median_file_bytes": ordered[len(ordered) // 2],
        "largest_file": largest,
        "largest_file_bytes": sizes[largest],
        "kinds": dict(sorted(kinds.items())),
        "turns_total": sum(turn_counts),
        "turns_max": max(turn_counts) if turn_counts else 0,
        "tool_output_share": round(output_bytes / max(1, sum(ordered)), 3),
        "append_target": append_target(plan),
        "long_target": plan[LONG_AT].name if len(plan) > LONG_AT else "",
        "generate_seconds": round(time.perf_counter() - started, 1),
    }
    shape_path.write_text(json.dumps(summary, indent=2) + "\n")
    return out


def _count_turns(path: Path) -> tuple[int, int]:
    """(turns, bytes of tool output as stored in the file, JSON-escaped)."""
    doc = json.loads(path.read_bytes())
    outputs = sum(
        len(json.dumps(part["output"], ensure_ascii=False).encode())
        for turn in doc.get("turns", [])
        for part in turn.get("parts", [])
        if part.get("type") == "tool" and isinstance(part.get("output"), str)
    )
    return len(doc.get("turns", [])), outputs


def append_target(plan: list[Planned]) -> str:
    """The session the append benchmark grows: the first plain ``ses_`` after index 20.

    It is the same session at every archive size (the plan does not depend on the size).
    """
    for p in plan[20:]:
        if p.kind == "ses":
            return p.name
    for p in plan:
        if p.kind in ("ses", "job", "named", "sub"):
            return p.name
    raise ValueError("no loadable session to append to")


def new_turn(doc: Json, seed: int = 1) -> Json:
    """One more realistic turn for ``doc`` (deterministic from its turn count)."""
    index = max([t.get("index", 0) for t in doc.get("turns", [])] or [0]) + 1
    planned = Planned(index=index, kind="ses", name=doc.get("session_name", ""))
    writer = SessionWriter(Pools.make(seed), planned, seed + index, 1.0, {})
    writer.clock = dt.datetime.fromisoformat(doc.get("updated_at") or _iso(BASE_TIME))
    turn = writer.turn(index, (1, 2), (2048, 16 * 1024))
    turn["status"] = "ok"
    if turn["parts"][-1]["type"] != "text":
        turn["parts"].append({"type": "text", "text": writer.answer(), "timestamp": writer.tick()})
    return turn


def append_turn(path: Path, seed: int = 1) -> int:
    """Rewrite ``path`` plainly (not atomically) with one more turn; returns its index."""
    doc = json.loads(path.read_bytes())
    turn = new_turn(doc, seed)
    doc["turns"].append(turn)
    doc["updated_at"] = turn["ended_at"]
    data = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()
    with open(path, "wb") as handle:
        handle.write(data)
    return int(turn["index"])


def small_archive(count: int, out: Path, seed: int = 1) -> Path:
    """An archive of ``count`` small sessions (issue 12's scale test): 3 turns each, one
    tool call a turn with a short output, CI ``job_`` runs of 8 roles a few minutes apart
    (series), an error in one session of 7, a denied permission in one of 11. Deterministic
    from ``seed``; session ``i`` does not depend on ``count``. Returns the sessions folder."""
    folder = out / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for i in range(count):
        rng = random.Random(seed * 1_000_003 + i)
        when = start + dt.timedelta(minutes=7 * i)
        ident = _ident(seed, i)
        name = f"job_{when:%Y%m%d_%H%M%S}_{ident}"
        turns = []
        for t in range(3):
            at = when + dt.timedelta(seconds=20 * t)
            stamp = _iso(at)
            turns.append(
                {
                    "index": t + 1,
                    "status": "error" if (i % 7 == 0 and t == 2) else "ok",
                    "started_at": stamp,
                    "ended_at": _iso(at + dt.timedelta(seconds=10 + rng.randrange(9))),
                    "model": "llama3.2",
                    "provider": "ollama",
                    "mode": "build",
                    "reasoning": "",
                    "parts": [
                        {
                            "type": "user",
                            "text": f"Step {t + 1}: {_words(rng, 8)}",
                            "timestamp": stamp,
                        },
                        {
                            "type": "tool",
                            "name": "run_command",
                            "input": {"command": f"pytest -q tests/test_{rng.randrange(40)}.py"},
                            "output": f"{rng.randrange(1, 90)} passed in 0.{rng.randrange(10, 99)}s",
                            "is_error": False,
                            "timestamp": _iso(at + dt.timedelta(seconds=2)),
                        },
                        {
                            "type": "text",
                            "text": _words(rng, 20),
                            "timestamp": _iso(at + dt.timedelta(seconds=5)),
                        },
                    ],
                }
            )
        doc = {
            "session_name": name,
            "session_id": ident,
            "created_at": _iso(when),
            "updated_at": _iso(when + dt.timedelta(seconds=60)),
            "parent_id": "",
            "role": f"nightly-{i % 8}",
            "version": "0.35.0",
            "sub_sessions": [],
            "turns": turns,
            "errors": [
                {
                    "code": 503,
                    "message": "Service Unavailable",
                    "timestamp": _iso(when + dt.timedelta(seconds=45)),
                }
            ]
            if i % 7 == 0
            else [],
            "permissions": [
                {
                    "tool": "run_command",
                    "action": "deny" if i % 11 == 0 else "allow",
                    "decision": "denied" if i % 11 == 0 else "granted",
                    "path": "pytest -q",
                    "timestamp": _iso(when + dt.timedelta(seconds=2)),
                }
            ],
        }
        (folder / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    return folder


def long_session(
    out: Path, turns: int = 5000, seed: int = 1, tools: tuple[int, int] = (2, 3)
) -> Path:
    """One session of ``turns`` turns of ``tools`` tool calls with 1-18 KB outputs (issue
    13's memory case: 5,000 turns are about 92 MB); returns its file."""
    planned = Planned(index=LONG_AT, kind="ses", name="ses_20260105_080000_long01")
    planned.session_id = "long01"
    writer = SessionWriter(Pools.make(seed), planned, seed, 1.0, {})
    doc = writer.document()
    doc["turns"] = [writer.turn(i, tools, (1024, 18 * 1024)) for i in range(1, turns + 1)]
    doc["updated_at"] = _iso(writer.clock)
    doc["permissions"] = writer.permissions
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{planned.name}.json"
    path.write_bytes((json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode())
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200, help="number of session files")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiplies turn counts and output sizes"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--shape", choices=SHAPES, default="mixed", help="mixed (issue 4) or output (issue 13)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: benchmarks/_archives/n<N>-x<scale>-s<seed>/",
    )
    parser.add_argument(
        "--small",
        action="store_true",
        help="issue 12's archive: --sessions small 3-turn CI runs (see small_archive)",
    )
    parser.add_argument(
        "--long-session",
        type=int,
        default=0,
        metavar="TURNS",
        help="write one session of TURNS turns with 1-18 KB outputs (issue 13's memory case)",
    )
    args = parser.parse_args(argv)
    if args.long_session:
        target = args.out or ARCHIVES / f"long-t{args.long_session}-s{args.seed}"
        path = long_session(target / "sessions", args.long_session, args.seed)
        print(f"{path}: {path.stat().st_size / 1e6:.1f} MB")
        return 0
    if args.small:
        target = args.out or ARCHIVES / f"small-n{args.sessions}-s{args.seed}"
        print(f"sessions folder: {small_archive(args.sessions, target, args.seed)}")
        return 0
    out = generate(
        args.sessions,
        args.scale,
        args.seed,
        args.out,
        log=lambda m: print(m, file=sys.stderr),
        shape=args.shape,
    )
    shape = json.loads((out / "shape.json").read_text())
    print(json.dumps(shape, indent=2))
    print(f"sessions folder: {out / 'sessions'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

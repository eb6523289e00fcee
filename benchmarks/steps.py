"""One measured benchmark step, run by ``run.py`` in a fresh interpreter.

``python benchmarks/steps.py STEP JSON_ARGS`` prints one JSON object on its last stdout
line: the step's own timing (``seconds``, measured around the work only, imports and
interpreter start excluded) and what it did. ``run.py`` measures the wall time and the
memory of the whole process tree around it.

Steps:

- ``build``: ``build_site`` (``sessions_dir``, ``out_dir``, ``search``, ``workers``);
- ``floor``: read and ``json.loads`` every ``*.json`` of ``sessions_dir``, then write the
  file sizes listed in ``sizes_file`` (the built site's files) under ``out_dir``, with
  ``workers`` processes (each reads and writes its share); with ``render: true`` (the
  render floor), also render every prose text with the configured markdown-it-py and
  HTML-escape every tool input and output;
- ``profile``: ``build_site`` under cProfile (one process unless ``workers``), stats saved
  to ``prof``; ``append`` grows a session by one turn first;
- ``phases``: a one-process build with timing wrappers around the main functions.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The publisher measured: run.py's snapshot of the code (BENCH_SOURCE), else this checkout.
sys.path.insert(0, os.environ.get("BENCH_SOURCE") or str(ROOT))


def step_build(args: dict[str, Any]) -> dict[str, Any]:
    from publisher.site.build import BuildOptions, build_site

    options = BuildOptions(
        sessions_dir=Path(args["sessions_dir"]),
        out_dir=Path(args["out_dir"]),
        search=bool(args.get("search", True)),
        workers=args.get("workers"),
    )
    started = time.perf_counter()
    report = build_site(options)
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "sessions": report.sessions,
        "failures": len(report.failures),
        "files_read": report.files_read,
        "sessions_rendered": report.sessions_rendered,
        "files_written": report.files_written,
        "files_removed": report.files_removed,
        "search": report.search,
    }


def _read_parse(paths: list[str]) -> tuple[int, int, int]:
    """(files, bytes, parse failures) after reading and parsing ``paths``."""
    total = failed = 0
    for name in paths:
        with open(name, "rb") as handle:
            data = handle.read()
        total += len(data)
        try:
            json.loads(data.decode("utf-8"))
        except ValueError:
            failed += 1
    return len(paths), total, failed


_CHUNK = b"<p>floor</p>\n" * 5042  # ~64 KiB


def _write(jobs: list[tuple[str, int]]) -> int:
    written = 0
    for name, size in jobs:
        with open(name, "wb") as handle:
            left = size
            while left > 0:
                piece = _CHUNK[: min(left, len(_CHUNK))]
                handle.write(piece)
                left -= len(piece)
        written += size
    return written


def _floor_worker(task: tuple[list[str], list[tuple[str, int]]]) -> tuple[int, int, int, int]:
    files, size, failed = _read_parse(task[0])
    return files, size, failed, _write(task[1])


PROSE_PARTS = ("user", "text", "thinking", "system")


def _render_texts(doc: Any) -> tuple[int, int]:
    """What rendering a session cannot avoid: every prose text (prompts, answers, thinking,
    system notes, tool analyses, compaction summaries) through the project's configured
    markdown-it-py, every tool input and output HTML-escaped. (characters of prose,
    characters escaped)."""
    import html

    from publisher.render.markup import MD

    prose = escaped = 0
    turns = doc.get("turns") if isinstance(doc, dict) else None
    for turn in turns if isinstance(turns, list) else []:
        parts = turn.get("parts") if isinstance(turn, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if not isinstance(part, dict):
                continue
            texts = []
            if part.get("type") in PROSE_PARTS:
                texts.append(part.get("text"))
            elif part.get("type") == "tool":
                texts.append(part.get("analysis"))
                for value in (json.dumps(part.get("input"), indent=2), part.get("output")):
                    if isinstance(value, str):
                        escaped += len(html.escape(value, quote=False))
            elif part.get("type") == "command":
                texts.append(part.get("summary"))
            for text in texts:
                if isinstance(text, str) and text:
                    prose += len(MD.render(text))
    return prose, escaped


def _render_floor_worker(task: tuple[list[str], list[tuple[str, int]]]) -> tuple[int, ...]:
    total = failed = prose = escaped = 0
    for name in task[0]:
        with open(name, "rb") as handle:
            data = handle.read()
        total += len(data)
        try:
            doc = json.loads(data.decode("utf-8"))
        except ValueError:
            failed += 1
            continue
        del data
        p, e = _render_texts(doc)
        prose += p
        escaped += e
    return len(task[0]), total, failed, _write(task[1]), prose, escaped


def step_floor(args: dict[str, Any]) -> dict[str, Any]:
    """The floor (``render: false``: read, parse, write) or the render floor (``render:
    true``: also every prose text through markdown-it and every tool input and output
    escaped), on the same kind of process pool as a build."""
    render = bool(args.get("render"))
    worker = _render_floor_worker if render else _floor_worker
    sessions_dir = Path(args["sessions_dir"])
    out_dir = Path(args["out_dir"])
    workers = int(args.get("workers") or os.cpu_count() or 1)
    sizes: list[int] = json.loads(Path(args["sizes_file"]).read_text())
    inputs = sorted(sessions_dir.glob("*.json"), key=lambda p: p.stat().st_size, reverse=True)
    outputs = []
    for k, size in enumerate(sizes):
        folder = out_dir / f"d{k // 500:04d}"
        outputs.append((str(folder / f"f{k}.html"), size))
    folders = {str(Path(name).parent) for name, _ in outputs}
    started = time.perf_counter()
    for name in sorted(folders):
        os.makedirs(name, exist_ok=True)
    # Deal inputs by decreasing size and outputs round-robin: balanced shares.
    tasks: list[tuple[list[str], list[tuple[str, int]]]] = [([], []) for _ in range(workers)]
    loads = [0] * workers
    for path in inputs:
        k = loads.index(min(loads))
        tasks[k][0].append(str(path))
        loads[k] += path.stat().st_size
    for k, job in enumerate(outputs):
        tasks[k % workers][1].append(job)
    if workers == 1:
        results = [worker(tasks[0])]
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.map(worker, tasks)
    seconds = time.perf_counter() - started
    extra = (
        {
            "prose_html_chars": sum(r[4] for r in results),
            "escaped_chars": sum(r[5] for r in results),
        }
        if render
        else {}
    )
    return {
        **extra,
        "seconds": seconds,
        "workers": workers,
        "files_read": sum(r[0] for r in results),
        "bytes_read": sum(r[1] for r in results),
        "parse_failures": sum(r[2] for r in results),
        "files_written": len(outputs),
        "bytes_written": sum(r[3] for r in results),
    }


def step_profile(args: dict[str, Any]) -> dict[str, Any]:
    """cProfile one build (default: one process, search off; ``append``: a session file to
    grow by one turn first, for profiling an incremental build)."""
    import cProfile
    import pstats

    from publisher.site.build import BuildOptions, build_site

    if args.get("append"):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import generate

        generate.append_turn(Path(args["append"]), int(args.get("seed", 1)))
    options = BuildOptions(
        sessions_dir=Path(args["sessions_dir"]),
        out_dir=Path(args["out_dir"]),
        search=bool(args.get("search", False)),
        workers=args.get("workers", 1),
    )
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    build_site(options)
    profiler.disable()
    seconds = time.perf_counter() - started
    profiler.dump_stats(args["prof"])
    stats = pstats.Stats(profiler)
    rows = []
    for (file, line, func), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append(
            {
                "function": f"{Path(file).name}:{line}({func})",
                "path": file,
                "calls": calls,
                "tottime": tottime,
                "cumtime": cumtime,
            }
        )
    by_cum = sorted(rows, key=lambda r: r["cumtime"], reverse=True)[:40]
    by_tot = sorted(rows, key=lambda r: r["tottime"], reverse=True)[:25]
    return {"seconds": seconds, "cumulative": by_cum, "tottime": by_tot}


#: (module, attribute, label) of the functions ``phases`` times; absent ones are skipped.
PHASES = [
    ("publisher.render.markup", "render_markdown", "Markdown (markdown-it-py)"),
    ("publisher.render.markup", "escape_text", "escape_text: <pre> text, session-ref regex"),
    ("publisher.render.markup", "highlight_json", "highlight_json: tool inputs"),
    ("publisher.prepare", "session_refs", "session_refs: references in every text (scan)"),
    ("publisher.site.stages.scan", "parse_session_bytes", "JSON parse + model (scan phase)"),
    # (before d22c657 the scan decoded the text and parsed it with json.loads:)
    ("publisher.site.stages.scan", "parse_session_text", "JSON parse + model (scan phase)"),
    ("publisher.prepare", "read_session", "read + JSON parse + model (render phase)"),
    (
        "publisher.render.html",
        "HtmlRenderer.render_turn",
        "render_turn: all turn HTML (includes the above)",
    ),
    ("publisher.render.html", "HtmlRenderer.render_session", "render_session: page shells"),
    ("publisher.site.staleness", "turn_key", "turn_key: fragment cache key per turn"),
    ("publisher.site.stages.render", "write_if_changed", "write_if_changed"),
    ("publisher.site.stages.scan", "scan_file", "scan_file: read, hash, parse, summary, refs"),
    ("publisher.site.stages.index", "render_index", "render_index"),
    # Before the stages (commits up to 0a97f61):
    ("publisher.site.build", "find_refs", "find_refs: REF_RE over every text (scan and render)"),
    ("publisher.site.build", "parse_session_text", "JSON parse + model (scan phase)"),
    ("publisher.loader", "parse_session_text", "JSON parse + model (render phase)"),
    ("publisher.site.render", "turn_key", "turn_key: fragment cache key per turn"),
    ("publisher.site.build", "write_if_changed", "write_if_changed"),
    ("publisher.site.build", "scan_file", "scan_file: read, hash, parse, summary, refs"),
    ("publisher.site.build", "render_index", "render_index"),
]


def step_phases(args: dict[str, Any]) -> dict[str, Any]:
    """A one-process build with timing wrappers around the main functions (no profiler).

    Profilers inflate call-heavy Python (markdown-it, jinja2) several times over; wrappers
    around a dozen functions called at most once per text cost next to nothing, so these
    shares are the real ones. Nested entries overlap (render_turn includes Markdown).
    """
    import functools
    import importlib

    totals: dict[str, float] = {}
    calls: dict[str, int] = {}

    def wrap(owner: Any, attr: str, label: str) -> None:
        func = getattr(owner, attr)

        @functools.wraps(func)
        def timed(*a: Any, **k: Any) -> Any:
            started = time.perf_counter()
            try:
                return func(*a, **k)
            finally:
                totals[label] = totals.get(label, 0.0) + time.perf_counter() - started
                calls[label] = calls.get(label, 0) + 1

        setattr(owner, attr, timed)

    for module_name, path, label in PHASES:
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        *parents, attr = path.split(".")
        for name in parents:
            owner = getattr(owner, name, None)
        if owner is not None and hasattr(owner, attr):
            wrap(owner, attr, label)
    from publisher.site.build import BuildOptions, build_site

    options = BuildOptions(
        sessions_dir=Path(args["sessions_dir"]),
        out_dir=Path(args["out_dir"]),
        search=False,
        workers=1,
    )
    started = time.perf_counter()
    build_site(options)
    seconds = time.perf_counter() - started
    rows = [
        {
            "phase": label,
            "seconds": totals[label],
            "share": totals[label] / seconds,
            "calls": calls[label],
        }
        for label in sorted(totals, key=lambda k: totals[k], reverse=True)
    ]
    return {"seconds": seconds, "phases": rows}


STEPS = {"build": step_build, "floor": step_floor, "profile": step_profile, "phases": step_phases}


def main() -> int:
    step, raw = sys.argv[1], sys.argv[2]
    result = STEPS[step](json.loads(raw))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

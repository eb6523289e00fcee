"""What our own search index would cost, for the decision issue 13 asks (Pagefind or not).

Builds, in one process, the core of a static inverted index over the text search indexes
today (see docs/search.md, "What is indexed": prompts, answers, thinking, commands, tool
names and inputs, an output of up to 24 lines and 3,000 characters whole and the last 6
lines of a longer one): one document per turn (results land on ``#turn-N``), words by
``\\w+`` lower-cased, a posting list of turns per word, shards by the word's first two
characters, each compressed as a client would load it. No positions, stemming or stored
excerpts: a lower bound of the indexer's work, to set beside Pagefind's CPU time on the
same archive (``run.py``'s search on minus search off).

Usage::

    python benchmarks/own_index.py benchmarks/_archives/output-n40-x1-s1/sessions
"""

from __future__ import annotations

import json
import re
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from publisher.loader import SessionLoadError, read_session, session_file_names
from publisher.model import CommandPart, TextualPart, ToolPart, Turn

WORD = re.compile(r"\w+")
WHOLE_LINES, WHOLE_CHARS, TAIL_LINES = 24, 3000, 6


def indexed_text(turn: Turn) -> Iterator[str]:
    """The pieces of a turn that search indexes."""
    for part in turn.parts:
        if isinstance(part, (TextualPart, CommandPart)):
            yield part.text
        elif isinstance(part, ToolPart):
            yield part.name
            yield json.dumps(part.input, ensure_ascii=False)
            out = part.output or ""
            lines = out.split("\n")
            whole = len(lines) <= WHOLE_LINES and len(out) <= WHOLE_CHARS
            yield out if whole else "\n".join(lines[-TAIL_LINES:])


def main() -> int:
    folder = Path(sys.argv[1])
    turns: list[Turn] = []
    for name in session_file_names(folder):
        try:
            turns.extend(read_session(folder / name).turns)
        except SessionLoadError:
            continue
    start = time.process_time()
    postings: dict[str, list[int]] = {}
    chars = 0
    for doc, turn in enumerate(turns):
        text = "\n".join(indexed_text(turn)).lower()
        chars += len(text)
        for word in set(WORD.findall(text)):
            postings.setdefault(word, []).append(doc)
    indexed = time.process_time()
    shards: dict[str, list[tuple[str, list[int]]]] = {}
    for word, docs in postings.items():
        shards.setdefault(word[:2], []).append((word, docs))
    size = sum(len(zlib.compress(json.dumps(v).encode(), 6)) for v in shards.values())
    done = time.process_time()
    print(
        f"{len(turns)} turns, {chars / 1e6:.1f} M characters indexed, {len(postings)} words; "
        f"postings {indexed - start:.2f} CPU s, {len(shards)} shards compressed "
        f"{done - indexed:.2f} CPU s, {size / 1e6:.1f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

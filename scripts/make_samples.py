"""Regenerate sample_sessions/: a realistic inventory-api story covering every feature of the session format (docs/session-format.md)."""

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "sample_sessions"
OUT.mkdir(exist_ok=True)


def ts(day, h, m, s):
    return f"2026-08-{day:02d}T{h:02d}:{m:02d}:{s:02d}+00:00"


class Clock:
    def __init__(self, day, h, m, s=0):
        self.day, self.t = day, h * 3600 + m * 60 + s

    def now(self, step=0):
        self.t += step
        return ts(self.day, self.t // 3600, self.t % 3600 // 60, self.t % 60)


def session(name, sid, created, parent="", role="", subs=(), version="0.35.0"):
    return {
        "created_at": created,
        "errors": [],
        "parent_id": parent,
        "permissions": [],
        "role": role,
        "session_id": sid,
        "session_name": name,
        "sub_sessions": list(subs),
        "turns": [],
        "updated_at": created,
        "version": version,
    }


def add_turn(
    s,
    clk,
    status,
    parts,
    model="qwen2.5-coder:32b",
    provider="ollama",
    mode="build",
    reasoning="medium",
    running=False,
):
    start = clk.now(0)
    built = []
    for p in parts:
        step = p.pop("_dt", 2)
        p["timestamp"] = clk.now(step)
        built.append(p)
    t = {
        "index": len(s["turns"]) + 1,
        "started_at": start,
        "ended_at": "" if running else clk.now(1),
        "status": status,
        "model": model,
        "provider": provider,
        "mode": mode,
        "reasoning": reasoning,
        "parts": built,
    }
    s["turns"].append(t)
    s["updated_at"] = built[-1]["timestamp"] if built else t["ended_at"] or start
    return t


def user(text, dt=0):
    return {"type": "user", "text": text, "_dt": dt}


def think(text, dt=3):
    return {"type": "thinking", "text": text, "_dt": dt}


def say(text, dt=4):
    return {"type": "text", "text": text, "_dt": dt}


def system(text, dt=0):
    return {"type": "system", "text": text, "_dt": dt}


def command(text, dt=0, **kw):
    return {"type": "command", "text": text, **kw, "_dt": dt}


def tool(name, inp, output, is_error=False, analysis="", dt=5, pending=False):
    p = {"type": "tool", "name": name, "input": inp}
    if not pending:
        p.update(output=output, is_error=is_error, analysis=analysis)
    p["_dt"] = dt
    return p


def perm(s, tool_, action, decision, path, when):
    s["permissions"].append(
        {"tool": tool_, "action": action, "decision": decision, "path": path, "timestamp": when}
    )


def save(s, fname=None):
    (OUT / (fname or s["session_name"] + ".json")).write_text(
        json.dumps(s, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


MAIN = "ses_20260817_120000_ab12cd"
REVIEW = "sub_20260817_121500_cd34ef"
SECURITY = "sub_20260817_122000_ef56gh"

PYTEST_FAIL = """============================= test session starts ==============================
platform linux -- Python 3.12.4, pytest-8.3.2, pluggy-1.5.0
rootdir: /home/dana/src/inventory-api
configfile: pyproject.toml
collected 48 items

tests/test_health.py ..                                                  [  4%]
tests/test_items.py ..............                                       [ 33%]
tests/test_reservations.py ......F.....                                  [ 58%]
tests/test_stock.py ....................                                 [100%]

=================================== FAILURES ===================================
__________________________ test_reserve_last_unit ______________________________

client = <starlette.testclient.TestClient object at 0x7f3a1c2b9d50>
seed_item = Item(sku='WID-042', name='Widget', stock=1)

    def test_reserve_last_unit(client, seed_item):
        r = client.post("/reservations", json={"sku": "WID-042", "qty": 1})
>       assert r.status_code == 201
E       assert 409 == 201
E        +  where 409 = <Response [409]>.status_code

tests/test_reservations.py:57: AssertionError
=========================== short test summary info ============================
FAILED tests/test_reservations.py::test_reserve_last_unit - assert 409 == 201
========================= 1 failed, 47 passed in 2.31s =========================
"""

README = """# inventory-api

A small FastAPI service that tracks stock and reservations.

## Reservations

A reservation holds `qty` units of a SKU for 15 minutes. The service refuses a
reservation that would take the available stock **below zero**:

```python
available = item.stock - reserved(item.sku)
if qty > available:
    raise Conflict("not enough stock")
```

Shell example (note the nested fence in the docs build):

~~~bash
curl -X POST localhost:8000/reservations -d '{"sku": "WID-042", "qty": 1}'
~~~

````markdown
```json
{"sku": "WID-042", "qty": 1}
```
````
"""

SERVICE_BEFORE = """    def reserve(self, sku: str, qty: int) -> Reservation:
        item = self.items.get(sku)
        available = item.stock - self.reserved(sku)
        if qty >= available:
            raise Conflict("not enough stock")
"""


def build_main():
    s = session(MAIN, "ab12cd", ts(17, 12, 0, 0), subs=[REVIEW])
    clk = Clock(17, 12, 0)
    # 1: failing test
    t = add_turn(
        s,
        clk,
        "ok",
        [
            user(
                "The test suite fails on `test_reserve_last_unit` since yesterday's refactor. Can you find out why?"
            ),
            think(
                "Run the failing test first to see the actual assertion, then read the reservation code."
            ),
            tool(
                "run_command",
                {
                    "command": "pytest -q tests/test_reservations.py",
                    "cwd": "/home/dana/src/inventory-api",
                },
                PYTEST_FAIL,
                is_error=True,
                analysis="One failure: reserving the last unit answers 409 instead of 201.",
            ),
            tool(
                "file_read",
                {"path": "app/service.py", "start_line": 40, "end_line": 45},
                SERVICE_BEFORE,
                analysis="The check uses >= where it should use >, an off-by-one.",
            ),
            say(
                "The failure is an **off-by-one** in `ReservationService.reserve`:\n\n"
                "```python\nif qty >= available:  # refuses qty == available\n```\n\n"
                "Reserving the last unit (`qty == available == 1`) is refused with 409. "
                "It should be `qty > available`. Shall I fix it?"
            ),
        ],
    )
    perm(
        s,
        "run_command",
        "ask",
        "granted",
        "/home/dana/src/inventory-api",
        t["parts"][2]["timestamp"],
    )
    perm(
        s,
        "file_read",
        "allow",
        "granted",
        "/home/dana/src/inventory-api/app/service.py",
        t["parts"][3]["timestamp"],
    )
    clk.now(40)
    # 2: README with fences inside the output
    t = add_turn(
        s,
        clk,
        "ok",
        [
            user("Before you change it: what does the README promise about reservations?"),
            tool(
                "file_read",
                {"path": "README.md"},
                README,
                analysis="The README says reservations may take stock to zero, not below.",
            ),
            say(
                "The README says a reservation may use **all** remaining stock (it refuses only what would go *below zero*), "
                "so `qty == available` must succeed. The test is right and the code is wrong."
            ),
        ],
        reasoning="off",
    )
    perm(
        s,
        "file_read",
        "allow",
        "granted",
        "/home/dana/src/inventory-api/README.md",
        t["parts"][1]["timestamp"],
    )
    clk.now(30)
    # 3: web search, noise tool, markdown answer
    add_turn(
        s,
        clk,
        "ok",
        [
            user(
                "Is there anything in the Python docs about comparing ints we should know for the quantity check? Quick look."
            ),
            system(
                "web_search: true. Search results for the operator's question are injected below; cite them when you use them."
            ),
            tool(
                "web_search",
                {"query": "python comparison operators integers docs"},
                "1. 6.10. Comparisons — Python 3 documentation — https://docs.python.org/3/reference/expressions.html#comparisons\n"
                "2. Built-in Types: numeric comparisons — https://docs.python.org/3/library/stdtypes.html#comparisons\n",
                analysis="The language reference section on comparisons is the authority.",
            ),
            tool(
                "web_fetch",
                {"url": "https://docs.python.org/3/reference/expressions.html#comparisons"},
                "[web_fetch result excluded from log, see tool call above for parameters]",
            ),
            say(
                "## Comparing quantities\n\nNothing surprising for plain `int`s:\n\n"
                "- `a > b` and `a >= b` are exact for integers of any size;\n"
                "- chained comparisons like `0 < qty <= available` are evaluated left to right;\n"
                "- `bool` is a subclass of `int`, so `True > 0` holds. Validate `qty` as a positive integer.\n\n"
                "| Expression | qty=1, available=1 |\n|---|---|\n| `qty > available` | `False` (allowed) |\n| `qty >= available` | `True` (refused, the bug) |\n\n"
                "See the [comparisons reference](https://docs.python.org/3/reference/expressions.html#comparisons)."
            ),
        ],
        reasoning="off",
    )
    clk.now(20)
    # 4: /model command
    add_turn(s, clk, "ok", [command("/model llama3.3:70b")], model="llama3.3:70b", reasoning="off")
    clk.now(15)
    # 5: fix, declined .env edit
    t = add_turn(
        s,
        clk,
        "ok",
        [
            user("Yes, fix it, and add a test for reserving more than the stock."),
            think(
                "Change >= to >. Add test_reserve_more_than_stock expecting 409. Then run the reservation tests."
            ),
            tool(
                "file_write",
                {
                    "path": "app/service.py",
                    "patch": "-        if qty >= available:\n+        if qty > available:\n",
                },
                "Applied 1 hunk to app/service.py",
                analysis="Comparison fixed.",
            ),
            tool(
                "file_write",
                {"path": ".env", "patch": "+DEBUG=1\n"},
                "Permission declined by the operator.",
                is_error=True,
            ),
            tool(
                "file_write",
                {
                    "path": "tests/test_reservations.py",
                    "patch": '+def test_reserve_more_than_stock(client, seed_item):\n+    r = client.post("/reservations", json={"sku": "WID-042", "qty": 2})\n+    assert r.status_code == 409\n',
                },
                "Applied 1 hunk to tests/test_reservations.py",
            ),
            tool(
                "run_command",
                {"command": "pytest -q tests/test_reservations.py"},
                "..............                                                           [100%]\n14 passed in 0.41s\n",
                analysis="All reservation tests pass, including the new one.",
            ),
            say(
                "Fixed: `qty > available`, plus `test_reserve_more_than_stock`. All 14 reservation tests pass.\n\n"
                "I also tried to set `DEBUG=1` in `.env` to get more logging; you declined that, so it is unchanged."
            ),
        ],
        model="llama3.3:70b",
    )
    p = t["parts"]
    perm(
        s,
        "file_write",
        "ask",
        "granted",
        "/home/dana/src/inventory-api/app/service.py",
        p[2]["timestamp"],
    )
    perm(s, "file_write", "ask", "declined", "/home/dana/src/inventory-api/.env", p[3]["timestamp"])
    perm(
        s,
        "file_write",
        "ask",
        "granted",
        "/home/dana/src/inventory-api/tests/test_reservations.py",
        p[4]["timestamp"],
    )
    perm(s, "run_command", "ask", "granted", "/home/dana/src/inventory-api", p[5]["timestamp"])
    clk.now(60)
    # 6: delegate a review
    t = add_turn(
        s,
        clk,
        "ok",
        [
            user("Get the reviewer role to look at the change before I commit."),
            think("Delegate to the reviewer role with the diff as context."),
            tool(
                "delegate",
                {
                    "role": "reviewer",
                    "task": "Review the off-by-one fix in app/service.py and the new test.",
                    "context": "new",
                },
                f"Delegated to {REVIEW} (role reviewer). Result:\nApprove with one note: add a test for qty=0 (should be 422). "
                "Security scan by the security role found nothing.",
                analysis="The review approves; it suggests a qty=0 test.",
            ),
            say(
                "The reviewer approves (see #cd34ef for the whole review). One suggestion: reject `qty=0` with 422 and test it."
            ),
        ],
        model="llama3.3:70b",
    )
    perm(s, "delegate", "allow", "granted", "reviewer", t["parts"][2]["timestamp"])
    clk.now(30)
    # 7: push denied, provider 401 -> error
    t = add_turn(
        s,
        clk,
        "error",
        [
            user("Good. Commit and push to main."),
            tool(
                "run_command",
                {
                    "command": "git commit -am 'Fix off-by-one in reservations' && git push origin main"
                },
                "Denied by policy: run_command 'git push' is not allowed for this project (permissions.deny).",
                is_error=True,
            ),
        ],
        model="llama3.3:70b",
    )
    perm(s, "run_command", "deny", "denied", "git push origin main", t["parts"][1]["timestamp"])
    s["errors"].append(
        {
            "code": 401,
            "message": "Unauthorized: the provider rejected the API key (token expired)",
            "timestamp": clk.now(2),
        }
    )
    clk.now(120)
    # 8: compaction
    add_turn(
        s,
        clk,
        "ok",
        [
            command(
                "/compact",
                summary=(
                    "The operator asked why test_reserve_last_unit failed. Cause: `qty >= available` in "
                    "ReservationService.reserve refused reserving the last unit. Fixed to `qty > available`, added "
                    "test_reserve_more_than_stock; 14 reservation tests pass. The reviewer (#cd34ef) approved and suggested a "
                    "qty=0 → 422 test. Pushing to main was denied by policy; the provider returned 401 once."
                ),
                compact_from=6,
            )
        ],
        model="llama3.3:70b",
        reasoning="off",
    )
    clk.now(600)
    # 9: parked ask answer
    add_turn(
        s,
        clk,
        "ok",
        [
            user("[answer to parked ask #3] yes, go ahead and bump the version"),
            think(
                "The operator approved the version bump I parked earlier: 1.4.1 -> 1.4.2 in pyproject.toml."
            ),
            tool(
                "file_write",
                {"path": "pyproject.toml", "patch": '-version = "1.4.1"\n+version = "1.4.2"\n'},
                "Applied 1 hunk to pyproject.toml",
            ),
            say("Bumped the version to **1.4.2**."),
        ],
        model="llama3.3:70b",
    )
    perm(
        s,
        "file_write",
        "ask",
        "granted",
        "/home/dana/src/inventory-api/pyproject.toml",
        s["turns"][-1]["parts"][2]["timestamp"],
    )
    clk.now(40)
    # 10: reasoning only, truncated
    add_turn(
        s,
        clk,
        "truncated",
        [
            user("Draft the release notes for 1.4.2 into session:release-notes."),
            think(
                "Release notes for 1.4.2. Sections: Fixed (reservation of the last unit), Tests (over-stock reservation), "
                "Chore (version bump). Keep it short and link the review #cd34ef. The notes should mention that pushing is "
                "still done by a human because of the deny rule, and that the",
                dt=30,
            ),
        ],
        model="llama3.3:70b",
        reasoning="high",
    )
    s["errors"].append(
        {
            "code": 0,
            "message": "max_tokens truncation: the answer hit max_tokens (4096) during reasoning",
            "timestamp": s["turns"][-1]["ended_at"],
        }
    )
    clk.now(30)
    # 11: truncated tool output, cancelled
    long_head = "".join(
        f"tests/test_stock.py::test_adjust_stock[case-{i:03d}] PASSED                     [{i // 3:3d}%]\n"
        for i in range(1, 25)
    )
    add_turn(
        s,
        clk,
        "cancelled",
        [
            user("Run the whole suite verbosely."),
            tool(
                "run_command",
                {"command": "pytest -vv"},
                long_head + "… (truncated from 48213 chars)",
                analysis="Output was long; all visible cases pass.",
                dt=40,
            ),
        ],
        model="llama3.3:70b",
    )
    clk.now(15)
    # 12: running, tool without output
    add_turn(
        s,
        clk,
        "running",
        [
            user("Now run the linter."),
            tool("run_command", {"command": "ruff check ."}, None, pending=True),
        ],
        model="llama3.3:70b",
        running=True,
    )
    return s


def build_review():
    s = session(REVIEW, "cd34ef", ts(17, 12, 15, 0), parent=MAIN, role="reviewer", subs=[SECURITY])
    clk = Clock(17, 12, 15)
    t = add_turn(
        s,
        clk,
        "ok",
        [
            user("Review the off-by-one fix in app/service.py and the new test."),
            think(
                "Read the diff, check boundary cases (qty=0, qty=available, qty>available), then ask security for a quick scan."
            ),
            tool(
                "run_command",
                {"command": "git diff"},
                "diff --git a/app/service.py b/app/service.py\n--- a/app/service.py\n+++ b/app/service.py\n@@ -42 +42 @@\n"
                "-        if qty >= available:\n+        if qty > available:\n",
                analysis="A one-character change, correct for the stated contract.",
            ),
            tool(
                "delegate",
                {
                    "role": "security",
                    "task": "Scan app/ for injection or auth issues introduced today.",
                },
                f"Delegated to {SECURITY} (role security). Result: no findings.",
                analysis="Security scan clean.",
            ),
            say(
                "**Approve.**\n\n1. The fix matches the README contract (stock may reach zero).\n"
                "2. Missing case: `qty=0` currently creates an empty reservation; it should be refused with **422**.\n"
                "3. Security scan (session:" + SECURITY + ") found nothing."
            ),
        ],
        model="qwen2.5-coder:32b",
        mode="plan",
    )
    perm(s, "run_command", "allow", "granted", "git diff", t["parts"][2]["timestamp"])
    perm(s, "delegate", "ask", "granted", "security", t["parts"][3]["timestamp"])
    return s


def build_security():
    s = session(SECURITY, "ef56gh", ts(17, 12, 20, 0), parent=REVIEW, role="security")
    clk = Clock(17, 12, 20)
    t = add_turn(
        s,
        clk,
        "ok",
        [
            user("Scan app/ for injection or auth issues introduced today."),
            tool(
                "run_command",
                {"command": "bandit -q -r app/"},
                "Run started:2026-08-17 12:20:03\n\nTest results:\n\tNo issues identified.\n\nCode scanned:\n"
                "\tTotal lines of code: 612\n\tTotal lines skipped (#nosec): 0\n",
                analysis="bandit reports no issues.",
            ),
            say("No findings. `bandit` is clean and today's diff touches only a comparison."),
        ],
        model="qwen2.5-coder:32b",
        mode="plan",
        reasoning="off",
    )
    perm(s, "run_command", "allow", "granted", "bandit -q -r app/", t["parts"][1]["timestamp"])
    clk.now(5)
    # empty turn: no content, no thinking, still records status and the tool result
    add_turn(
        s,
        clk,
        "empty",
        [
            tool(
                "run_command",
                {"command": "pip-audit -r requirements.txt"},
                "No known vulnerabilities found\n",
            ),
        ],
        model="qwen2.5-coder:32b",
        mode="plan",
        reasoning="off",
    )
    perm(
        s,
        "run_command",
        "allow",
        "granted",
        "pip-audit -r requirements.txt",
        s["turns"][-1]["parts"][0]["timestamp"],
    )
    return s


def build_job():
    s = session(
        "job_20260826_110230_7f3k2a",
        "7f3k2a",
        ts(26, 11, 2, 30),
        role="nightly-ci",
        version="0.34.2",
    )
    clk = Clock(26, 11, 2, 30)
    t = add_turn(
        s,
        clk,
        "ok",
        [
            user("Nightly: run the test suite and the dependency audit, report anything red."),
            tool(
                "run_command",
                {"command": "pytest -q"},
                "................................................ [100%]\n49 passed in 2.87s\n",
                analysis="49 tests pass.",
            ),
            tool(
                "run_command",
                {"command": "pip-audit -r requirements.txt"},
                "Found 1 known vulnerability in 1 package\nName    Version ID             Fix Versions\n------- ------- -------------- ------------\nh11     0.14.0  GHSA-vqfr-h8mv-ghfj 0.16.0\n",
                is_error=True,
                analysis="h11 0.14.0 has a known advisory; 0.16.0 fixes it.",
            ),
            say(
                "Nightly report for **inventory-api**:\n\n- tests: 49 passed\n- audit: `h11 0.14.0` is affected by "
                "GHSA-vqfr-h8mv-ghfj; upgrade to `0.16.0`."
            ),
        ],
        model="llama3.2:3b",
        mode="build",
        reasoning=False,
    )
    perm(s, "run_command", "allow", "granted", "pytest -q", t["parts"][1]["timestamp"])
    perm(
        s,
        "run_command",
        "allow",
        "granted",
        "pip-audit -r requirements.txt",
        t["parts"][2]["timestamp"],
    )
    clk.now(5)
    add_turn(
        s,
        clk,
        "error",
        [
            user("Open an issue for the h11 upgrade."),
            think("Use the issue tracker tool with a short title and the advisory id."),
        ],
        model="llama3.2:3b",
        reasoning=False,
    )
    s["errors"].append(
        {
            "code": 0,
            "message": "stream EOF before completion (connection reset by provider)",
            "timestamp": s["turns"][-1]["ended_at"],
        }
    )
    s["errors"].append(
        {"code": 503, "message": "Service Unavailable", "timestamp": s["turns"][-1]["ended_at"]}
    )
    return s


def build_named():
    s = session("release-notes", "", ts(17, 12, 40, 0), role="writer")
    clk = Clock(17, 12, 40)
    add_turn(
        s,
        clk,
        "ok",
        [
            user("Release notes for inventory-api 1.4.2, short, for the changelog."),
            say(
                "## 1.4.2 (2026-08-17)\n\n### Fixed\n- Reserving the last unit of a SKU no longer fails with 409 "
                "(off-by-one in the stock check).\n\n### Tests\n- `test_reserve_more_than_stock` covers over-stock "
                "reservations.\n\nReviewed in #cd34ef."
            ),
        ],
        model="llama3.3:70b",
        reasoning="off",
    )
    return s


for s in (build_main(), build_review(), build_security(), build_job(), build_named()):
    save(s)

(OUT / "ses_20260301_090000_flat01.json").write_text(
    json.dumps(
        {
            "name": "ses_20260301_090000_flat01",
            "created_at": "2026-03-01T09:00:00+00:00",
            "messages": [
                {"role": "user", "content": "List the endpoints of inventory-api."},
                {"role": "assistant", "content": "GET /items, POST /reservations, GET /health."},
            ],
        },
        indent=2,
    )
    + "\n"
)
(OUT / "ses_20260601_100000_old002.json").write_text(
    json.dumps(
        {
            "created_at": "2026-06-01T10:00:00+00:00",
            "errors": [],
            "id": "old002",
            "name": "ses_20260601_100000_old002",
            "permissions": [],
            "turns": [
                {
                    "index": 1,
                    "status": "ok",
                    "parts": [
                        {
                            "type": "user",
                            "text": "Add a /health endpoint.",
                            "timestamp": "2026-06-01T10:00:00+00:00",
                        },
                        {
                            "type": "text",
                            "text": 'Added GET /health returning {"ok": true}.',
                            "timestamp": "2026-06-01T10:00:09+00:00",
                        },
                    ],
                }
            ],
            "updated_at": "2026-06-01T10:00:09+00:00",
        },
        indent=2,
    )
    + "\n"
)
print(sorted(p.name for p in OUT.iterdir()))

"""What a run's requests to models spent: tokens, and what they cost (issue 29).

The one home of these figures: every output (the pages, the index, ``polyglav sessions
--format json``, ``--summary``, the JUnit report, ``--max-cost`` and ``--max-tokens``) adds
up a session's :attr:`.model.Turn.usage` here and prices it with one :class:`Prices`, so
they agree on every figure. ``docs/usage.md`` says what each figure means and what a log
cannot tell.

**Tokens.** A :class:`Tokens` adds up usage entries: ``input`` (not read from the prompt
cache nor written to it), ``cache_read``, ``cache_write``, ``output`` (reasoning included)
and, of the output, ``reasoning``. Their :attr:`Tokens.total` is input, both caches and
output. A session whose log records no usage (Polyglav's own format) has no tokens (None),
never zero tokens.

**Cost.** Each usage entry is one request, priced on its own (a price may depend on the
request's size: a tier above 200,000 input tokens), with the rates of its model, its
provider and the day of its turn (UTC), in pico-dollars (10⁻¹² USD) as whole numbers, so
sums are exact; a figure shown or printed is that sum rounded once to the micro-dollar
(:func:`micro_usd`). A model the table has no price for is *unpriced*: its tokens are
counted apart (:attr:`Spend.unpriced`) and a cost that includes them is unknown (None),
never a guess. Only tokens are priced: a fee per request or per web search is not counted.

**Price tables.** :class:`Prices` is the table a build or a command prices with: the
snapshot of prices ``genai-prices`` ships (its data as installed: nothing is ever fetched),
or a ``--prices FILE`` of our own format (:func:`load_price_file`), optionally falling back
to the shipped table for the models it does not list. ``genai-prices`` is imported only
when a model must be priced from it (it costs about 0.3 s of CPU): reading sessions
without usage, and the read-only commands, never import it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .model import Session, Turn, Usage

if TYPE_CHECKING:
    from genai_prices.types import ModelPrice

PICO = 10**12
"""Pico-dollars in a dollar: costs are whole numbers of them."""
PER_MTOK = 10**6
"""Pico-dollars a token costs at one dollar per million tokens."""
SHIPPED = "genai-prices"
"""The name of the shipped price table (the Python package that ships it)."""


@dataclass(slots=True, frozen=True)
class Tokens:
    """Tokens added up over usage entries (see the module docstring)."""

    input: int = 0
    """Input tokens neither read from nor written to the prompt cache."""
    output: int = 0
    """Output tokens, reasoning included."""
    cache_read: int = 0
    """Input tokens read from the prompt cache."""
    cache_write: int = 0
    """Input tokens written to the prompt cache."""
    reasoning: int = 0
    """Of :attr:`output`, reasoning tokens (when the log says them apart)."""

    @property
    def total(self) -> int:
        """Every token: input, cache reads, cache writes and output (reasoning is part of
        output, not added again)."""
        return self.input + self.output + self.cache_read + self.cache_write

    def plus(self, other: Tokens) -> Tokens:
        return Tokens(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.reasoning + other.reasoning,
        )

    def as_dict(self) -> dict[str, int]:
        """The counts by name, as ``polyglav sessions --format json`` prints them."""
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "reasoning": self.reasoning,
        }

    @classmethod
    def of(cls, entry: Usage) -> Tokens:
        """The tokens of one entry (zero for an entry that does not count)."""
        if entry.problem:
            return cls()
        return cls(entry.input, entry.output, entry.cache_read, entry.cache_write, entry.reasoning)


def add_tokens(first: Tokens | None, second: Tokens | None) -> Tokens | None:
    """Two figures added, None only when neither records usage."""
    if first is None:
        return second
    return first if second is None else first.plus(second)


@dataclass(slots=True, frozen=True)
class Spend:
    """What some usage came to: its tokens and their cost."""

    tokens: Tokens | None = None
    """The tokens, or None when no usage was recorded (shown as nothing, not as zero)."""
    picousd: int = 0
    """The cost of the priced tokens, in pico-dollars."""
    unpriced: int = 0
    """Tokens (:attr:`Tokens.total`) of requests no price was found for."""
    unpriced_models: tuple[str, ...] = ()
    """The models of those requests, sorted ("" for a request naming no model)."""
    uncounted: int = 0
    """Usage entries that do not count (:attr:`.model.Usage.problem`)."""

    def plus(self, other: Spend) -> Spend:
        return Spend(
            add_tokens(self.tokens, other.tokens),
            self.picousd + other.picousd,
            self.unpriced + other.unpriced,
            tuple(sorted({*self.unpriced_models, *other.unpriced_models})),
            self.uncounted + other.uncounted,
        )

    @property
    def key(self) -> tuple[object, ...]:
        """Its values as a plain tuple (a cache key hashes it)."""
        tokens = self.tokens
        counts = None if tokens is None else (
            tokens.input, tokens.output, tokens.cache_read, tokens.cache_write, tokens.reasoning
        )  # fmt: skip
        return (counts, self.picousd, self.unpriced, self.unpriced_models, self.uncounted)

    @property
    def recorded(self) -> bool:
        """True when any usage was recorded."""
        return self.tokens is not None

    @property
    def priced(self) -> bool:
        """True when usage was recorded and every request of it was priced."""
        return self.tokens is not None and not self.unpriced_models

    @property
    def micro_usd(self) -> int | None:
        """The cost in micro-dollars (:func:`micro_usd`), None when it is not known (no
        usage, or some unpriced)."""
        return micro_usd(self.picousd) if self.priced else None

    @property
    def cost_usd(self) -> float | None:
        """The cost in dollars, to the micro-dollar, as JSON prints it; None when unknown."""
        micro = self.micro_usd
        return None if micro is None else micro / 10**6


def micro_usd(picousd: int) -> int:
    """Pico-dollars rounded (half to even) to the micro-dollar: the one rounding every
    output makes of a cost."""
    whole, rest = divmod(picousd, 10**6)
    if rest * 2 > 10**6 or (rest * 2 == 10**6 and whole % 2):
        whole += 1
    return whole


# --- price tables ----------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class Rate:
    """The price of one kind of token: pico-dollars a token, by the request's input size."""

    base: int
    """Below the first tier."""
    tiers: tuple[tuple[int, int], ...] = ()
    """(start, price): a request of more than ``start`` input tokens (uncached, cache reads
    and cache writes together) pays ``price`` for every token of this kind, the tier with
    the highest start it passes; in increasing order of start."""

    def at(self, request_input: int) -> int:
        price = self.base
        for start, tier in self.tiers:
            if request_input > start:
                price = tier
        return price


@dataclass(slots=True, frozen=True)
class Rates:
    """What each kind of token of a request costs, for one model at one time."""

    input: Rate
    output: Rate
    cache_read: Rate
    cache_write: Rate
    cache_write_1h: Rate
    reasoning: Rate
    bands: tuple[tuple[int, tuple[int, int, int, int, int, int]], ...] = field(
        init=False, repr=False, compare=False
    )
    """(start, the six prices above it), the highest start first, the base last (start
    -1): the prices of a request found in one pass."""

    def __post_init__(self) -> None:
        kinds = (
            self.input, self.output, self.cache_read, self.cache_write, self.cache_write_1h,
            self.reasoning,
        )  # fmt: skip
        starts = sorted({start for kind in kinds for start, _ in kind.tiers}, reverse=True)
        bands = [(start, tuple(k.at(start + 1) for k in kinds)) for start in starts]
        bands.append((-1, tuple(k.base for k in kinds)))
        object.__setattr__(self, "bands", tuple(bands))

    def cost(self, entry: Usage) -> int:
        """The pico-dollars ``entry`` costs (a request)."""
        size = entry.input + entry.cache_read + entry.cache_write
        for start, prices in self.bands:  # noqa: B007  (the band the size is in)
            if size > start:
                break
        i, o, cr, cw, cw1h, r = prices
        return (
            entry.input * i
            + entry.cache_read * cr
            + (entry.cache_write - entry.cache_write_1h) * cw
            + entry.cache_write_1h * cw1h
            + (entry.output - entry.reasoning) * o
            + entry.reasoning * r
        )


@dataclass(slots=True, frozen=True)
class FileEntry:
    """One model's rates in a ``--prices`` file."""

    model: str
    """The model's name, lower case; a final ``*`` matches every name it starts."""
    provider: str
    """The provider it applies to (lower case), "" for any."""
    start: str
    """The first day it applies (ISO), "" for always."""
    end: str
    """The last day it applies (ISO), "" for always."""
    rates: Rates
    """Its rates."""

    def matches(self, provider: str, model: str, day: str) -> bool:
        name = model.lower()
        if self.model.endswith("*"):
            if not name.startswith(self.model[:-1]):
                return False
        elif name != self.model:
            return False
        if self.provider and provider.lower() != self.provider:
            return False
        return (not self.start or day >= self.start) and (not self.end or day <= self.end)


@dataclass(slots=True, frozen=True)
class PriceFile:
    """A ``--prices`` file, read and checked (:func:`load_price_file`)."""

    label: str
    """How pages name it: its ``name``, else the file's name, with a digest of its bytes."""
    digest: str
    """SHA-256 of its bytes."""
    entries: tuple[FileEntry, ...]
    """Its models, in file order (the first that matches prices a request)."""
    fallback: bool
    """True when models it does not list are priced with the shipped table."""


class Prices:
    """The price table usage is priced with (see the module docstring): ``Prices()`` is
    the shipped table, ``Prices(load_price_file(path))`` a ``--prices`` file. Lookups are
    remembered in the object; the shipped table is imported on the first one that needs
    it. Pickled without what it remembered (a worker process looks up again)."""

    __slots__ = ("_file", "_memo", "_probed")

    def __init__(self, file: PriceFile | None = None) -> None:
        self._file = file
        self._memo: dict[tuple[str, str, str], Rates | None] = {}
        """(provider, model, day) → its rates, None when unpriced."""
        self._probed: dict[int, tuple[Any, Rates]] = {}
        """id of a shipped price → (that price, kept alive; its rates)."""

    def __reduce__(self) -> tuple[type[Prices], tuple[PriceFile | None]]:
        # Made again from its file (a __getstate__ returning None, the shipped table's,
        # would skip __setstate__ and leave the slots empty).
        return (Prices, (self._file,))

    def load_shipped(self) -> None:
        """Import the shipped table now (a build's process, before it forks its workers,
        when its sessions may need it: they then share it instead of each importing it)."""
        if self.uses_shipped:
            from genai_prices import data_snapshot

            data_snapshot.get_snapshot()

    @property
    def uses_shipped(self) -> bool:
        """True when models may be priced from the shipped table."""
        return self._file is None or self._file.fallback

    @property
    def label(self) -> str:
        """Which table prices, as pages say it: ``genai-prices 0.2.3``, ``prices.json
        (sha256 1a2b3c4d5e6f)``, or the file then the shipped table."""
        shipped = f"{SHIPPED} {shipped_version()}"
        if self._file is None:
            return shipped
        return f"{self._file.label}, then {shipped}" if self._file.fallback else self._file.label

    @property
    def key(self) -> str:
        """What the figures depend on (a build's key): the table's version or the file's
        digest."""
        parts = [f"{SHIPPED}={shipped_version()}" if self.uses_shipped else ""]
        if self._file is not None:
            parts.append(self._file.digest)
        return ";".join(parts)

    def rates(self, provider: str, model: str, day: str) -> Rates | None:
        """The rates of ``model`` served by ``provider`` ("" when not known) on ``day``
        (ISO), None when the table has no price for it."""
        key = (provider, model, day)
        if key in self._memo:
            return self._memo[key]
        found: Rates | None = None
        if model and day:
            if self._file is not None:
                found = next(
                    (e.rates for e in self._file.entries if e.matches(provider, model, day)), None
                )
            if found is None and self.uses_shipped:
                found = self._shipped(provider, model, day)
        self._memo[key] = found
        return found

    def _shipped(self, provider: str, model: str, day: str) -> Rates | None:
        from genai_prices import data_snapshot  # (lazily: about 0.3 s of CPU)

        snapshot = data_snapshot.get_snapshot()
        try:
            found_provider, found = snapshot.find_provider_model(
                model, None, provider or None, None
            )
            when = datetime.combine(date.fromisoformat(day), datetime.min.time(), UTC)
            price = found.get_prices(when)
        except (LookupError, ValueError):
            return None
        probed = self._probed.get(id(price))
        if probed is None:
            rates = _probe(price, found_provider, found, when)
            if rates is None:
                return None
            probed = self._probed[id(price)] = (price, rates)
        return probed[1]


def shipped_version() -> str:
    """The installed ``genai-prices`` version (its metadata: the package is not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("genai-prices")
    except PackageNotFoundError:
        return "(not installed)"


def _probe(price: ModelPrice, provider: Any, model: Any, when: datetime) -> Rates | None:
    """The rates of a shipped price, asked of ``genai-prices`` itself: the difference its
    own calculation makes for one more token of each kind, at a request size in each of
    its tiers (so its rules for which price applies to which token are its own, and a fee
    per request cancels out). None when it cannot price text tokens."""
    from genai_prices.types import TieredPrices, Usage

    tiered = [value for value in vars(price).values() if isinstance(value, TieredPrices)]
    starts = sorted({tier.start for value in tiered for tier in value.tiers})

    def cost(**counts: int) -> Decimal:
        found = model.calc_price(Usage(**counts), provider, genai_request_timestamp=when)
        total: Decimal = found.total_price
        return total

    def rates_at(size: int) -> dict[str, int]:
        base = cost(input_tokens=size)
        plain = {
            "input": cost(input_tokens=size + 1),
            "cache_read": cost(input_tokens=size + 1, cache_read_tokens=1),
            "cache_write": cost(input_tokens=size + 1, cache_write_tokens=1),
            "cache_write_1h": cost(
                input_tokens=size + 1, cache_write_tokens=1, cache_write_1h_tokens=1
            ),
            "output": cost(input_tokens=size, output_tokens=1),
            "reasoning": cost(input_tokens=size, output_tokens=1, output_reasoning_tokens=1),
        }
        return {kind: _pico(value - base) for kind, value in plain.items()}

    try:
        bands = [(0, rates_at(0))] + [(start, rates_at(start + 1)) for start in starts]
    except (ValueError, TypeError, ArithmeticError, LookupError):
        return None
    kinds = {}
    for kind in ("input", "output", "cache_read", "cache_write", "cache_write_1h", "reasoning"):
        base = bands[0][1][kind]
        tiers = tuple((start, found[kind]) for start, found in bands[1:])
        kinds[kind] = Rate(base, tuple(t for t in tiers if t[1] != base) if tiers else ())
    return Rates(**kinds)


def _pico(dollars: Decimal) -> int:
    """Dollars as whole pico-dollars (half to even)."""
    return int((dollars * PICO).to_integral_value(rounding=ROUND_HALF_EVEN))


# --- the --prices file -------------------------------------------------------------------


class PriceFileError(ValueError):
    """A ``--prices`` file that cannot be used; the message names the file and the reason."""


KINDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h", "reasoning")
"""The kinds of token a price file gives a rate for (USD per million tokens)."""
_DAY_RE = re.compile(r"\A\d{4}-\d{2}-\d{2}\Z")
_DECIMAL_RE = re.compile(r"\A\d{1,9}(\.\d{1,12})?\Z")
MAX_PRICE = Decimal(1_000_000)
"""The largest rate a price file may give (USD per million tokens)."""


def load_price_file(path: Path) -> PriceFile:
    """Read a ``--prices`` file (its format: ``docs/usage.md``); :class:`PriceFileError`
    names what is wrong."""
    where = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PriceFileError(f"{where}: cannot read: {exc.strerror or exc}") from None
    try:
        doc = json.loads(data, parse_float=Decimal, parse_int=Decimal)
    except (ValueError, RecursionError) as exc:
        raise PriceFileError(f"{where}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        raise PriceFileError(f"{where}: expected an object with a models array")
    unknown = sorted(set(doc) - {"name", "models", "fallback"})
    if unknown:
        raise PriceFileError(f"{where}: unknown field {unknown[0]!r}")
    name = doc.get("name", path.name)
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise PriceFileError(f"{where}: name: expected a text of 1 to 200 characters")
    fallback = doc.get("fallback")
    if fallback not in (None, SHIPPED):
        raise PriceFileError(f"{where}: fallback: expected {SHIPPED!r} or nothing")
    entries = tuple(
        _file_entry(value, f"{where}: models[{i}]") for i, value in enumerate(doc["models"])
    )
    digest = hashlib.sha256(data).hexdigest()
    return PriceFile(f"{name} (sha256 {digest[:12]})", digest, entries, fallback is not None)


def _file_entry(value: object, where: str) -> FileEntry:
    if not isinstance(value, dict):
        raise PriceFileError(f"{where}: expected an object")
    unknown = sorted(set(value) - {"model", "provider", "from", "until", "tiers", *KINDS})
    if unknown:
        raise PriceFileError(f"{where}: unknown field {unknown[0]!r}")
    model = value.get("model")
    if not isinstance(model, str) or not model.strip("*"):
        raise PriceFileError(f"{where}.model: expected a model name")
    provider = value.get("provider", "")
    if not isinstance(provider, str):
        raise PriceFileError(f"{where}.provider: expected a text")
    days = []
    for key in ("from", "until"):
        day = value.get(key, "")
        if not isinstance(day, str) or (day and not _valid_day(day)):
            raise PriceFileError(f"{where}.{key}: expected a day, YYYY-MM-DD")
        days.append(day)
    base = _kind_rates(value, where, None)
    tiers_value = value.get("tiers", [])
    if not isinstance(tiers_value, list):
        raise PriceFileError(f"{where}.tiers: expected an array")
    tiers: list[tuple[int, dict[str, int]]] = []
    for i, tier in enumerate(tiers_value):
        at = f"{where}.tiers[{i}]"
        if not isinstance(tier, dict):
            raise PriceFileError(f"{at}: expected an object")
        extra = sorted(set(tier) - {"above", *KINDS})
        if extra:
            raise PriceFileError(f"{at}: unknown field {extra[0]!r}")
        above = tier.get("above")
        if not isinstance(above, Decimal) or above != above.to_integral_value() or above < 0:
            raise PriceFileError(f"{at}.above: expected a whole number of input tokens")
        if tiers and int(above) <= tiers[-1][0]:
            raise PriceFileError(f"{at}.above: tiers must be in increasing order")
        tiers.append((int(above), _kind_rates(tier, at, base)))
    kinds = {
        kind: Rate(base[kind], tuple((start, found[kind]) for start, found in tiers))
        for kind in KINDS
    }
    return FileEntry(model.lower(), provider.lower(), days[0], days[1], Rates(**kinds))


def _valid_day(text: str) -> bool:
    if not _DAY_RE.match(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _kind_rates(value: dict[str, Any], where: str, below: dict[str, int] | None) -> dict[str, int]:
    """The pico-dollar rates an entry gives (``below`` None), or a tier of it (``below``:
    the entry's). In an entry, ``input`` and ``output`` are required and a kind not given
    costs what the kind it is part of costs (cache reads and writes as input, one-hour
    cache writes as cache writes, reasoning as output); in a tier, a kind not given costs
    what it costs below the tier."""
    found: dict[str, int] = {}
    for kind in KINDS:
        if kind not in value:
            continue
        rate = value[kind]
        if isinstance(rate, str) and _DECIMAL_RE.match(rate):
            rate = Decimal(rate)  # ("0.075": a price written as text keeps its digits)
        try:
            ok = isinstance(rate, Decimal) and rate.is_finite() and 0 <= rate <= MAX_PRICE
        except InvalidOperation:
            ok = False
        if not ok:
            raise PriceFileError(
                f"{where}.{kind}: expected a price in USD per million tokens, from 0 to "
                f"{MAX_PRICE:,}"
            )
        found[kind] = _pico(rate / PER_MTOK)
    if below is None:
        for kind in ("input", "output"):
            if kind not in found:
                raise PriceFileError(f"{where}.{kind}: missing (USD per million tokens)")
        found.setdefault("cache_read", found["input"])
        found.setdefault("cache_write", found["input"])
        found.setdefault("cache_write_1h", found["cache_write"])
        found.setdefault("reasoning", found["output"])
        return found
    return {kind: found.get(kind, below[kind]) for kind in KINDS}


# --- a session's figures -----------------------------------------------------------------


def day_of(stamp: str) -> str:
    """The UTC day (ISO) of a timestamp, "" when it has none (a time without a zone is
    read as UTC)."""
    from .audit import utc_time

    when = utc_time(stamp)
    return when.date().isoformat() if when is not None else ""


@dataclass(slots=True, frozen=True)
class Priced:
    """One usage entry, priced."""

    model: str
    """Its model (the entry's, else its turn's)."""
    day: str
    """The UTC day it is priced at (its turn's start, else the session's creation)."""
    tokens: Tokens
    """Its tokens (zero when it does not count)."""
    picousd: int | None
    """Its cost; None when unpriced."""
    problem: str = ""
    """Why it does not count ("" when it counts)."""


def priced_entries(session: Session, turn: Turn, prices: Prices) -> Iterator[Priced]:
    """Each usage entry of ``turn`` (a turn of ``session``), priced (one at a time, for a
    reader of each; the sums below do not make these)."""
    day = day_of(turn.started_at) or day_of(session.created_at)
    for entry in turn.usage:
        model = entry.model or turn.model
        if entry.problem:
            yield Priced(model, day, Tokens(), 0, entry.problem)
            continue
        rates = prices.rates(turn.provider, model, day)
        yield Priced(model, day, Tokens.of(entry), None if rates is None else rates.cost(entry))


Row = list[int]
"""A sum of entries: input, output, cache read, cache write, reasoning, pico-dollars,
unpriced tokens."""


def _sums(
    session: Session, turns: Iterable[Turn], prices: Prices
) -> tuple[dict[tuple[str, str], Row], int]:
    """The entries of ``turns`` added up by (day, model), and how many do not count: the
    one pass every figure is made of (whole numbers, one row a day and model)."""
    sums: dict[tuple[str, str], Row] = {}
    uncounted = 0
    created = ""
    for turn in turns:
        if not turn.usage:
            continue
        day = day_of(turn.started_at)
        if not day:
            created = created or day_of(session.created_at)
            day = created
        provider = turn.provider
        for entry in turn.usage:
            if entry.problem:
                uncounted += 1
                continue
            model = entry.model or turn.model
            row = sums.get((day, model))
            if row is None:
                row = sums[day, model] = [0, 0, 0, 0, 0, 0, 0]
            row[0] += entry.input
            row[1] += entry.output
            row[2] += entry.cache_read
            row[3] += entry.cache_write
            row[4] += entry.reasoning
            rates = prices.rates(provider, model, day)
            if rates is None:
                row[6] += entry.input + entry.output + entry.cache_read + entry.cache_write
            else:
                row[5] += rates.cost(entry)
    return sums, uncounted


def _spend(sums: dict[tuple[str, str], Row], uncounted: int) -> Spend:
    if not sums:
        return Spend(uncounted=uncounted)
    totals = [0] * 7
    models = set()
    for (_, model), row in sums.items():
        for i, n in enumerate(row):
            totals[i] += n
        if row[6]:
            models.add(model)
    tokens = Tokens(*totals[:5])
    return Spend(tokens, totals[5], totals[6], tuple(sorted(models)), uncounted)


def turn_tokens(turn: Turn) -> Tokens | None:
    """A turn's tokens without their cost (None when it records no usage that counts)."""
    counted = [entry for entry in turn.usage if not entry.problem]
    if not counted:
        return None
    total = Tokens()
    for entry in counted:
        total = total.plus(Tokens.of(entry))
    return total


def turn_spend(session: Session, turn: Turn, prices: Prices) -> Spend:
    """What one turn spent."""
    return _spend(*_sums(session, (turn,), prices)) if turn.usage else Spend()


def session_spend(session: Session, prices: Prices) -> Spend:
    """What a session spent (its own turns; its sub-sessions are theirs)."""
    return _spend(*_sums(session, session.turns, prices))


Group = tuple[str, str, int, int, int, int, int, int, int]
"""A session's spend on one day with one model: (day, model, input, output, cache_read,
cache_write, reasoning, pico-dollars, unpriced tokens)."""


def groups_of(session: Session, prices: Prices) -> tuple[Group, ...]:
    """A session's spend by day and model, sorted (what its summary keeps: the index, the
    activity chart and the sums over sub-sessions are made of it)."""
    sums, _ = _sums(session, session.turns, prices)
    return tuple((day, model, *row) for (day, model), row in sorted(sums.items()))  # type: ignore[misc]


def spend_of_groups(groups: Sequence[Group], uncounted: int = 0) -> Spend:
    """The spend a session's :func:`groups_of` add up to."""
    return _spend({(day, model): list(rest) for day, model, *rest in groups}, uncounted)

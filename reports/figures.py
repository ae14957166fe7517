"""What each test kind shows: every figure a test stores, described once (its name, its unit, how
it reads), for every reader: the terminal (:mod:`pdx.reports.display`), run pages and reports
(:mod:`pdx.reports`). A reader lays the figures out; it never decides which there are.

A test kind (the ``kind`` the record schema allows: ``pp``, ``tg``, ``pg``, ``serve``) has a
:class:`Kind`: the columns of its table, one row a test (:class:`Figure`: a stored statistic,
its label, unit and format, and how soon a narrow terminal may leave it out), and the statistics
it shows in other forms (latency distributions with every percentile, per-test notes such as a
capacity search's bracket and points, a stall, a TTFT split, turns, an over-saturation stop).
Figures that span tests (a concurrency sweep's knee, the prefix cache's saving) are
:func:`run_notes`, and the conditions a test ran under (:func:`condition_text`,
:func:`condition_warnings`) go beside every kind's rows.

``Kind.shows`` names every statistic a test of the kind can hold; :func:`unshown` lists those a
test holds that its kind does not show, and tests/test_every_figure_shown.py fails on any, and on a
kind the record schema allows that has no description here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

# What other processes did meanwhile, in words (the thresholds are the conditions module's own).
from pdx.measure.conditions import MIN_CPU_WINDOW_S
from pdx.measure.conditions.gpu_figures import FIGURES as GPU_FIGURES
from pdx.measure.conditions.gpu_figures import REASON
from pdx.measure.conditions import notes as _condition_notes
from pdx.contract.backend import FIGURES as SAMPLE_FIGURES
from pdx.domain.headline import NOISY_CV  # a rate whose coefficient of variation is above this is noisy
from pdx.domain.serving.analysis import cache_summary, sweep_summary

MISSING = "-"


def number(value: Any, spec: str = ".1f") -> str:
    """A stored number as a table shows it; "-" where there is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float)
                                                                            and not math.isfinite(value)):
        return MISSING
    return format(value, spec)


def _dig(stats: dict, key: str) -> Any:
    """``stats["ttft_ms"]["p99"]`` for ``"ttft_ms.p99"``; None where any part is missing."""
    value: Any = stats
    for part in key.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


# --- the pieces every reader lays out ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Figure:
    """One stored figure: ``key`` is where it sits in a test's statistics (dotted), ``keep`` how long
    a narrow terminal keeps it (0: always; a higher number is left out sooner)."""

    key: str
    label: str
    unit: str | None = None
    spec: str = ".1f"
    keep: int = 5
    about: str = ""
    read: Callable[[dict], Any] | None = None  # stats -> value, where the dotted key is not enough
    show: Callable[[dict], str] | None = None  # stats -> text, where the number alone is not enough
    better: str | None = None  # "higher" or "lower": which of two runs' figures a comparison marks best

    def value(self, stats: dict) -> Any:
        return self.read(stats) if self.read else _dig(stats, self.key)

    def text(self, stats: dict) -> str:
        return self.show(stats) if self.show else number(self.value(stats), self.spec)

    @property
    def header(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    label: str
    unit: str | None = None
    keep: int = 5
    about: str = ""
    left: bool = False  # text, aligned left; numbers align right
    wraps: bool = False  # long text that may wrap onto more lines (notes); numbers never do


@dataclass(frozen=True, slots=True)
class Cell:
    text: str
    value: Any = None  # what a sortable table sorts by
    warn: bool = False
    title: str = ""  # more words than fit, for a page's tooltip


@dataclass(slots=True)
class Row:
    test: str
    cells: list[Cell]
    status: str = "ok"
    error: str | None = None


@dataclass(slots=True)
class Table:
    key: str
    title: str
    columns: list[Column]
    rows: list[Row]
    note: str = ""

    def without_empty_columns(self) -> "Table":
        """The table less the columns no row has a figure in (a closed loop has no schedule)."""
        keep = [i for i, c in enumerate(self.columns)
                if i == 0 or any(r.cells[i].text not in (MISSING, "") for r in self.rows if r.cells)]
        return Table(self.key, self.title, [self.columns[i] for i in keep],
                     [Row(r.test, [r.cells[i] for i in keep] if r.cells else [], r.status, r.error) for r in self.rows],
                     self.note)


@dataclass(frozen=True, slots=True)
class Note:
    """A figure that is more than a number in a column: a sentence, and lines under it (a capacity
    search's points)."""

    topic: str
    test: str | None
    text: str
    warn: bool = False
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Kind:
    """What a test kind shows. ``columns``: its table, one row a test; ``shows``: every statistic a
    test of the kind can hold, each shown by a column, the distributions, a note or the samples."""

    kind: str
    title: str
    columns: tuple[Figure, ...]
    shows: frozenset[str]
    notes: Callable[[dict], list[Note]]
    about: str = ""


# --- conditions: every kind ---------------------------------------------------------------------------

def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def _span(start: dict | None, end: dict | None, key: str) -> str | None:
    """A GPU figure at a test's start and end ("405 -> 1980"; one value where they agree or one is missing)."""
    values = [f"{r[key]:.0f}" if r[key] >= 10 else f"{r[key]:.1f}"
              for r in (start, end) if r and r.get(key) is not None]
    return " -> ".join(dict.fromkeys(values)) or None


def gpu_text(gpu: dict) -> list[str]:
    """Each GPU's clocks, temperature, power and throttle reasons over a test, in the words and units of
    :mod:`pdx.measure.conditions.gpu_figures`."""
    parts = []
    for device in gpu.get("devices") or []:
        start, end = device.get("start"), device.get("end")
        last = end or start or {}
        said = []
        for figure in GPU_FIGURES:
            span = _span(start, end, figure.key)
            if span is not None and not figure.bound:
                of = f" of {last[figure.of]:.0f}" if figure.of and last.get(figure.of) else ""
                said.append(f"{figure.label} {span}{of} {figure.unit}")
        # idle is the rest state, not a reason against anything; the others are named, those that throttle first
        seen = {k for r in (start, end) if r for k in (r.get("reasons") or []) if k in REASON and k != "idle"}
        order = list(REASON)
        reasons = [REASON[k].words for k in sorted(seen, key=lambda k: (not REASON[k].throttles, order.index(k)))]
        if reasons:
            said.append(f"clocks held by {', '.join(reasons)}")
        name = f" {device['name']}" if device.get("name") not in (None, "?") else ""
        parts.append(f"GPU {device['index']}{name}: {', '.join(said) or 'nothing readable'}")
    return parts


def condition_text(c: dict) -> str:
    """One line: other processes' and pdx's CPU use, load, frequency, heat, power, GPU memory, each GPU's
    state, cool-down."""
    parts = []
    if c.get("other_cpu_cores") is not None:
        own = f" (pdx {c['own_cpu_cores']:.2f})" if c.get("own_cpu_cores") is not None else ""
        parts.append(f"other processes {c['other_cpu_cores']:.2f} of {c.get('cpu_count') or '?'} cores{own}")
    elif c.get("window_s") is not None and c["window_s"] < MIN_CPU_WINDOW_S:
        parts.append(f"CPU use not read: {c['window_s']:g} s is too short a window")
    if c.get("steal_cores"):
        parts.append(f"steal {c['steal_cores']:.2f} cores")
    load = c.get("load_average") or {}
    if load.get("start") and load.get("end"):
        parts.append(f"load {load['start'][0]:.2f} -> {load['end'][0]:.2f}")
    freq = c.get("frequency") or {}
    if freq.get("mhz"):
        top = f" of {freq['max_mhz']:.0f}" if freq.get("max_mhz") else ""
        governor = f", {freq['governor']}" if freq.get("governor") else ""
        parts.append(f"{freq['mhz']:.0f}{top} MHz ({freq['source']}{governor})")
    thermal = c.get("thermal") or {}
    if thermal.get("max_celsius") is not None:
        parts.append(f"{thermal['max_celsius']:.0f} °C hottest zone")
    if thermal.get("cpu_speed_limit") is not None:
        parts.append(f"CPU speed limit {thermal['cpu_speed_limit']}%")
    power = c.get("power") or {}
    if power.get("source"):
        charge = f" {power['battery_percent']:.0f}%" if power.get("battery_percent") is not None else ""
        parts.append(f"{power['source']}{charge}")
    gpu = c.get("gpu_memory") or {}
    if gpu.get("limit_bytes"):
        verdict = "fits" if gpu.get("fits") else "DOES NOT FIT"
        parts.append(f"GPU memory {_gib(gpu['need_bytes'])} of {_gib(gpu['limit_bytes'])} ({verdict})")
    parts += gpu_text(c.get("gpu") or {})
    if c.get("cooldown_s"):
        parts.append(f"after {c['cooldown_s']:g} s cool-down")
    return ", ".join(parts) or "nothing readable"


def condition_warnings(test: dict) -> list[str]:
    """What the conditions say against a result, in words ([] when nothing)."""
    return _condition_notes(test.get("conditions"))


def conditions(run: dict) -> list[tuple[str, str, bool]]:
    """(test, its conditions in one line, whether they say something against it) of each test that
    stored them."""
    return [(t["name"], condition_text(t["conditions"]), bool(condition_warnings(t)))
            for t in run["tests"] if t.get("conditions")]


# --- pp, tg, pp+tg: rates against their ceilings ------------------------------------------------------

def _rate_text(stats: dict) -> str:
    rate = stats.get("rate") or {}
    if rate.get("mean") is None:
        return MISSING
    stddev = f"{rate['stddev']:.2f}" if rate.get("stddev") is not None else "?"
    return f"{rate['mean']:.2f} ± {stddev}"


def _split_text(stats: dict) -> str:
    if "prompt_rate" not in stats:
        return ""
    return f"pp {stats['prompt_rate']['mean']:.1f}, tg {stats['gen_rate']['mean']:.1f}"


def rate_notes(test: dict) -> list[tuple[str, bool]]:
    """Adaptive stop, noise, what the machine did meanwhile, outliers, a tool's own figure: (words,
    whether they speak against the result), in the order a row shows them."""
    stats = test.get("stats") or {}
    found: list[tuple[str, bool]] = []
    adaptive = test.get("adaptive")
    if adaptive:
        ci = adaptive.get("achieved_ci")
        found.append((f"n={adaptive['repetitions']} ±{ci:.1%}" if ci is not None else f"n={adaptive['repetitions']}",
                      False))
        if adaptive.get("stopped_by") == "cap":
            found.append(("cap reached", True))
    why = ", ".join(condition_warnings(test))
    if stats.get("cv") is not None and stats["cv"] > NOISY_CV:
        found.append((f"noisy: cv {stats['cv']:.0%}{', ' + why if why else ''}", True))
    elif why:
        found.append((why, True))
    if stats.get("outliers"):
        count = len(stats["outliers"])
        found.append((f"{count} outlier{'s' if count > 1 else ''}", True))
    if stats.get("reported"):
        found.append(("as reported", False))
    if (test.get("ceilings") or {}).get("unfit"):
        found.append(("not a result: cannot fit", True))
    return found


def own_rates(test: dict) -> str:
    """The engine's own rates for the test, by its own definitions, where a backend keeps them."""
    own = (test.get("engine") or {}).get("own_rates") or {}
    shown = [f"{phase} {own[phase]:.1f}" for phase in ("pp", "tg") if own.get(phase) is not None]
    return f"{own.get('label', 'engine')}'s own: {', '.join(shown)}" if shown else ""


def row_notes(test: dict) -> list[tuple[str, bool]]:
    """Everything a pp/tg row says beside its figures: :func:`rate_notes`, then the engine's own rates."""
    own = own_rates(test)
    return rate_notes(test) + ([(own, False)] if own else [])


def _http_notes(test: dict) -> list[Note]:
    """pp/tg over HTTP: the requests behind the rates (their latencies are in the distributions)."""
    served = (test.get("stats") or {}).get("serving")
    if not served:
        return []
    failed = f", {served['failed']} failed" if served.get("failed") else ""
    return [Note("http", test["name"], f"{test['name']}: {served['requests']} requests over HTTP{failed}; "
                                        "their latencies are in the distributions")]


def _speculation_notes(test: dict) -> list[Note]:
    """A speculating test: what the engine drafted and accepted (its own counters), and what its
    decode ceiling counts per output token instead of one pass of the target."""
    spec = (test.get("stats") or {}).get("speculation")
    if not spec:
        return []
    if spec.get("acceptance") is None:  # the engine counted, and drafted nothing: its ceiling is one pass a token
        return [Note("speculation", test["name"], f"{test['name']}: speculative decoding on, but nothing drafted in "
                     f"{spec['tokens']:,} output tokens: each took a pass of the target model")]
    text = (f"{test['name']}: speculative decoding, {spec['accepted']:,} of {spec['drafted']:,} drafted tokens "
            f"accepted ({spec['acceptance']:.0%}), {spec['tokens_per_pass']:.2f} tokens per pass of the target model")
    decode = ((test.get("ceilings") or {}).get("phases") or {}).get("decode") or {}
    counted = decode.get("speculative")
    if counted:
        draft = (f" and {counted['drafted_per_token']:.2f} drafted tokens" if counted.get("draft_counted")
                 else " (the draft's own reads not counted)")
        text += (f"; its ceiling counts {counted['target_passes_per_token']:.2f} target passes{draft} per output "
                 f"token, where one token a pass allows {counted['single_token_ceiling']:,.1f} t/s")
    itl = ((test.get("stats") or {}).get("serving") or {}).get("itl_ms")
    if itl and itl.get("p99") is not None:  # a pass's accepted drafts arrive together: gaps near 0, then one long
        text += f"; tokens arrive in bursts: ITL p50 {itl['p50']:.2f} ms, p99 {itl['p99']:.2f} ms"
    return [Note("speculation", test["name"], text)]


# --- energy: every kind, where a meter read the test ---------------------------------------------------

def _money(value: float, currency: str) -> str:
    return f"{currency} {value:.3g}"


def energy_text(test: dict) -> str:
    """One line: J/token of the phase, watts, idle and net, tokens per joule, the cost and its price, what
    the meters cover, and whether the test was lengthened or is still too short for them."""
    e = (test.get("stats") or {}).get("energy")
    if not e:
        return ""
    per = "output token, its prompts' energy included" if e["phase"] == "serving" else f"{e['phase']} token"
    text = (f"{test['name']}: {number(e['j_per_token'], '.4g')} J per {per}; {e['watts']:.1f} W over "
            f"{e['seconds']:.2f} s")
    if e.get("idle_watts") is not None:
        text += (f" (idle {e['idle_watts']:.1f} W: net {number(e.get('net_j_per_token'), '.4g')} J/token, "
                 f"{e['net_watts']:.1f} W)")
    if e.get("tokens_per_joule") is not None:
        text += f"; {e['tokens_per_joule']:.3g} tokens/J"
    if e.get("cost_per_mtok") is not None:
        said = " (the default; set --price-kwh)" if e.get("price_said") == "default" else ""
        text += (f"; {_money(e['cost_per_mtok'], e['currency'])} per million tokens at "
                 f"{_money(e['price_kwh'], e['currency'])}/kWh{said}")
    text += f"; meters: {', '.join(e['covers'])}"
    if e.get("lengthened"):
        text += f"; {e['lengthened']} repetitions added so the meters could read it"
    if e.get("coarse"):
        text += "; still short for the meters' step: a rough figure"
    return text


def lengthened_text(run: dict) -> str:
    """The run's summary of the repetitions pdx added so the energy meters could read its tests (each test's
    own note says so too): "energy: 174 repetitions added to pp512, 10 to tg128 so the meters could read them";
    "" where none were."""
    added = [(t["name"], (t.get("energy") or {}).get("lengthened")) for t in run.get("tests") or ()]
    added = [(name, count) for name, count in added if count]
    if not added:
        return ""
    (name, count), *rest = added
    told = ", ".join([f"{count} repetitions added to {name}", *(f"{more} to {other}" for other, more in rest)])
    return f"energy: {told} so the meters could read {'them' if rest else 'it'}"


def _energy_notes(test: dict) -> list[Note]:
    text = energy_text(test)
    return [Note("energy", test["name"], text, warn=bool((test.get("stats") or {}).get("energy", {}).get("coarse")))] \
        if text else []


ENERGY = Figure("energy.j_per_token", "J/token", None, ".3g", keep=3, better="lower",
                about="joules per token of the test's phase, all meters together (net of idle: its note)")


def _figure_notes(test: dict) -> list[Note]:
    """The figures a sample's record declares beyond its time and counts, each with its description
    there (:data:`pdx.contract.backend.FIGURES`): mean ± stddev over the samples, and their range."""
    found = (test.get("stats") or {}).get("figures") or {}
    notes = []
    for figure in SAMPLE_FIGURES:
        summary = found.get(figure.name)
        if summary:
            about = f" ({figure.doc})" if figure.doc else ""
            notes.append(Note("figures", test["name"], f"{figure.name}{about}: {number(summary['mean'], '.4g')} ± "
                              f"{number(summary['stddev'], '.2g')} over {summary['n']} samples "
                              f"({number(summary['min'], '.4g')} to {number(summary['max'], '.4g')})"))
    return notes


def _rate_notes(test: dict) -> list[Note]:
    return _http_notes(test) + _speculation_notes(test) + _energy_notes(test) + _figure_notes(test)


RATE_COLUMNS = (
    Figure("rate", "t/s", None, keep=0, about="mean tokens/s over the repetitions ± their standard deviation",
           read=lambda s: _dig(s, "rate.mean"), show=_rate_text),
    Figure("per_sequence_rate", "t/s per seq", None, ".2f", keep=6, about="the rate of one sequence of the batch"),
    Figure("prompt_rate", "pp, tg t/s", None, keep=4, about="a pp+tg test's two phases, each rated on its own",
           read=lambda s: _dig(s, "prompt_rate.mean"), show=_split_text),
)
# Statistics of a pp/tg test and where they show: rate (n, mean, ± stddev and 95% CI, median, min, max)
# and per-sequence rate in the table; cv, outliers and "reported" in its notes; tokens and ns with the
# raw samples; serving: the latency distributions of the requests over HTTP; speculation: a note;
# figures (a sample's own, declared in its record beyond its time and counts): a note each.
RATE_STATS = frozenset({"tokens", "rate", "ns", "per_sequence_rate", "cv", "outliers", "reported", "serving",
                        "speculation", "energy", "figures"})

PREFILL = Kind("pp", "prefill", (*RATE_COLUMNS[:2], ENERGY), RATE_STATS, _rate_notes,
               "prompt tokens/s (pp) against the compute bound, at depth and in batches")
DECODE = Kind("tg", "decode", (*RATE_COLUMNS[:2], ENERGY), RATE_STATS, _rate_notes,
              "generated tokens/s (tg) against the memory bound, at depth and in batches")
BLENDED = Kind("pg", "prefill and decode in one request", (*RATE_COLUMNS, ENERGY),
               RATE_STATS | {"prompt_rate", "gen_rate"},
               _rate_notes, "one blended rate, and each phase's where the backend timed them apart")


# --- serving: latencies, throughput, goodput and each scenario's own figures ----------------------------

def _ok_sent(stats: dict) -> str:
    if stats.get("completed") is None and stats.get("requests") is None:
        return MISSING
    return f"{number(stats.get('completed'), 'd')}/{number(stats.get('requests'), 'd')}"


def _tokens(stats: dict) -> str:
    if stats.get("prompt_tokens") is None and stats.get("output_tokens") is None:
        return MISSING
    return f"{number(stats.get('prompt_tokens'), 'd')}/{number(stats.get('output_tokens'), 'd')}"


def _median(key: str) -> Callable[[dict], Any]:
    return lambda s: _dig(s, f"{key}.median") if _dig(s, f"{key}.median") is not None else _dig(s, f"{key}.p50")


SERVING_COLUMNS = (
    Figure("completed", "ok/sent", None, keep=3, about="requests that completed, of those sent", show=_ok_sent),
    Figure("duration_s", "duration", "s", ".2f", keep=7, about="first send to last end"),
    Figure("prompt_tokens", "tokens", "in/out", keep=7, show=_tokens,
           about="prompt and generated tokens of the completed requests"),
    Figure("request_throughput", "request rate", "req/s", ".2f", keep=2, better="higher",
           about="completed requests over the duration"),
    Figure("output_throughput", "output", "tok/s", ".1f", keep=0, better="higher",
           about="generated tokens over the duration"),
    Figure("total_token_throughput", "total", "tok/s", ".1f", keep=6,
           about="prompt and generated tokens over the duration"),
    Figure("per_stream_decode_rate", "per stream", "tok/s", ".1f", keep=5, better="higher",
           about="one stream's decode rate, mean"),
    Figure("ttft_ms.median", "TTFT p50", "ms", keep=0, better="lower", read=_median("ttft_ms"),
           about="send to first token"),
    Figure("ttft_ms.p99", "TTFT p99", "ms", keep=3, better="lower"),
    Figure("ttft_sched_ms.p99", "sched TTFT p99", "ms", keep=5,
           about="from the scheduled send: the wait for a slot counts"),
    Figure("dispatch_ms.p99", "wait p99", "ms", keep=6, about="scheduled send to actual send"),
    Figure("itl_ms.median", "ITL p50", "ms", keep=1, better="lower", read=_median("itl_ms"),
           about="every gap between tokens, pooled over requests (vLLM's ITL)"),
    Figure("itl_ms.p99", "ITL p99", "ms", keep=4),
    Figure("tpot_ms.median", "TPOT p50", "ms", keep=3, better="lower", read=_median("tpot_ms"),
           about="each request's mean gap: (E2EL - TTFT) / (tokens - 1)"),
    Figure("e2el_ms.median", "E2EL p50", "ms", keep=4, better="lower", read=_median("e2el_ms"),
           about="send to last token"),
    Figure("chunks_per_token", "chunks", "per token", ".2f", keep=7,
           about="stream chunks per generated token (below 1: the server merged tokens)"),
    Figure("goodput", "goodput", "req/s", ".2f", keep=1, better="higher",
           about="completed requests per second that met every SLO"),
)

CAPACITY = Figure("capacity", "capacity", "req/s or streams", ".3g", better="higher",
                  about="the largest load at which the SLO held (a capacity test)",
                  read=lambda s: _dig(s, "capacity.capacity"),
                  show=lambda s: MISSING if _dig(s, "capacity.capacity") is None else (
                      f"c={_dig(s, 'capacity.capacity'):g}" if _dig(s, "capacity.axis") == "concurrency"
                      else f"{_dig(s, 'capacity.capacity'):.3g} req/s"))
_BY_KEY = {f.key: f for f in SERVING_COLUMNS}
# The serving figures a report sets side by side, run against run.
SIDE_BY_SIDE = (_BY_KEY["output_throughput"], _BY_KEY["request_throughput"], _BY_KEY["per_stream_decode_rate"],
                _BY_KEY["ttft_ms.median"], _BY_KEY["ttft_ms.p99"], _BY_KEY["itl_ms.median"], _BY_KEY["tpot_ms.median"],
                _BY_KEY["e2el_ms.median"], _BY_KEY["goodput"], CAPACITY, ENERGY)

# Latency distributions (ms) a serving test stores, with what each is.
DISTRIBUTIONS = (
    ("ttft_ms", "TTFT", "send to first token"),
    ("ttfat_ms", "TTFAT", "send to first answer token: after a reasoning model's thinking (TTFT where none)"),
    ("ttft_sched_ms", "sched TTFT", "from the scheduled send to the first token: the wait for a slot counts"),
    ("tpot_ms", "TPOT", "each request's mean gap between tokens"),
    ("itl_ms", "ITL", "every gap between tokens, pooled over requests"),
    ("e2el_ms", "E2EL", "send to last token"),
    ("e2el_sched_ms", "sched E2EL", "from the scheduled send to the last token"),
    ("dispatch_ms", "wait", "the wait for a slot: scheduled send to actual send"),
)
DISTRIBUTION_KEYS = frozenset(key for key, _, _ in DISTRIBUTIONS)

ITL_NOTE = ("ITL: every gap between tokens, pooled over requests (a chunk of k tokens counts as k gaps), as vLLM; "
            "TPOT: each request's mean gap, which GuideLLM and AIPerf call ITL. sched TTFT: from the scheduled send, "
            "so the wait for a slot (wait) counts.")


REASONING_NOTE = ("thinking: reasoning_content/reasoning deltas or a <think> span; TTFAT: send to the first answer "
                  "token; rates per stream: thinking tokens after the first over first thinking to first answer token, "
                  "answer "
                  "tokens after the first over first answer to last token")


# The server's own series (pdx.domain.serving.server_series): pdx's name, how the note says it, its format.
SERIES_FIGURES = (("peak_running", "peak running", "g"), ("peak_waiting", "peak waiting", "g"),
                  ("peak_kv_cache_usage", "peak KV-cache use", "pct"), ("requests_done", "requests done", "g"),
                  ("preemptions", "preemptions", "g"), ("prefix_cache_hit_rate", "prefix-cache hit rate", "pct"),
                  ("generation_tokens", "tokens generated", "g"), ("prompt_tokens", "prompt tokens", "g"),
                  ("prefix_cache_hits", "prefix-cache hits", "g"), ("decode_calls", "decode calls", "g"))


def server_series_text(series: dict) -> str:
    """What the server's own /metrics said over a test: its peaks and counts, and how it was read."""
    said = [f"{label} {number(series[key] * 100, '.0f') + '%' if kind == 'pct' else number(series[key], 'g')}"
            for key, label, kind in SERIES_FIGURES if series.get(key) is not None]
    failed = f", {series['failed']} failed" if series.get("failed") else ""
    return (f"the server's /metrics, {series.get('points')} readings {number(series.get('every_ms'), 'g')} ms apart"
            f"{failed}: "
            + (", ".join(said) or "none of the metrics pdx reads"))


def _ms(dist: dict | None, key: str) -> str:
    return number((dist or {}).get(key))


def _axis(value: float | None, axis: str | None) -> str:
    if value is None:
        return "?"
    return f"c={value:g}" if axis == "concurrency" else f"{value:.3g} req/s"


def _slo_text(slo: dict) -> str:
    return ", ".join(f"{k} {v:g} ms" for k, v in slo.items())


def capacity_note(name: str, found: dict) -> Note:
    """The capacity, its bracket and what broke first, then one line per point measured."""
    slo = _slo_text(found.get("slo") or {})
    lo, hi = found.get("bracket") or (None, None)
    axis = found.get("axis")
    if found.get("found"):
        unit = "" if axis == "concurrency" else " req/s"
        uncertainty = f"; +/- {found['uncertainty']:.2g}{unit}" if found.get("uncertainty") is not None else ""
        head = (f"capacity {found['capacity']:.3g}{unit} (bracket {_axis(lo, axis)} holds, "
                f"{_axis(hi, axis)} breaks{uncertainty})")
    else:
        head = f"capacity not bracketed: {found.get('note')} ({_axis(lo, axis)} .. {_axis(hi, axis)})"
    broke = found.get("broke_first")
    cause = f"; broke first: {broke} ({found['side']} side)" if broke and broke not in ("errors", "saturation") else (
        f"; broke first: {broke}" if broke else "")
    if found.get("precision") is not None:
        cause += f"; precision {found['precision']:g}" + ("" if found.get("narrow", True) else " (not reached)")
    if found.get("out_of_time"):
        cause += "; time budget spent: the bracket as it stood"
    if found.get("repeats"):
        cause += f"; searched {len(found['repeats'])} times (the first search's points below, then the others)"
    lines = []
    for point in sorted(found.get("points") or [], key=lambda p: p["x"]):
        values = ", ".join(f"{k} {v:.1f} ms" if isinstance(v, (int, float)) else f"{k} -"
                           for k, v in (point.get("values") or {}).items())
        verdict = "holds" if point["held"] else f"breaks ({', '.join(point.get('broke') or [])})"
        stopped = point.get("gave_up")
        sent = (f"{point['requests']} of {stopped['of_planned']} requests (stopped once certain)"
                if stopped and stopped.get("of_planned") else f"{point.get('requests')} requests")
        failed = f", {point['failed']} failed" if point.get("failed") else ""
        saturated = ", over-saturated" if point.get("saturation") else ""
        lines.append(f"{_axis(point['x'], axis)}: {verdict}; {values}; {sent}{failed}{saturated}, "
                     f"{number(point.get('request_throughput'), '.2f')} req/s, "
                     f"{number(point.get('output_throughput'))} out tok/s")
    for k, again in enumerate((found.get("repeats") or [])[1:], start=2):
        lo2, hi2 = again.get("bracket") or (None, None)
        lines.append(f"search {k}: capacity {number(again.get('capacity'), '.3g')} (bracket {_axis(lo2, axis)} .. "
                     f"{_axis(hi2, axis)}; broke first: {again.get('broke_first') or '-'})")
    return Note("capacity", name, f"{name}: {head} for {slo} at p{found.get('percentile', 0):g}{cause}",
                warn=bool(found.get("out_of_time")), lines=tuple(lines))


def _stall_notes(name: str, stall: dict) -> list[Note]:
    drop = stall.get("rate_drop")
    out = [Note("stall", name,
                f"{name}: {stall['streams']} streams, {stall['inject_prompt']}-token prompt prefilled in "
                f"{number(stall.get('inject_ttft_ms'))} ms; their ITL {number(stall.get('itl_before_median_ms'))} ms "
                f"before, max {number(stall.get('itl_during_max_ms'))} / p99 {number(stall.get('itl_during_p99_ms'))} "
                f"ms "
                f"during (p99 over all {number(stall.get('itl_all_p99_ms'))} ms); decode rate per stream "
                f"{number(stall.get('stream_rate_before'))} -> {number(stall.get('stream_rate_during'))} tok/s"
                + (f" ({drop:.0%} lower)" if isinstance(drop, (int, float)) else ""))]
    if stall.get("streams_decoding_at_inject") == 0:
        out.append(Note("stall", name, f"{name}: every stream had ended before the long prompt went in: no stall "
                                       "was measured (a client or server held up by other work?)", warn=True))
    return out


def serving_notes(test: dict) -> list[Note]:
    """A serving test's figures that are more than a column: the SLO and its goodput, the schedule, the
    TTFT split, the prefix cache's claim, turns, an over-saturation stop, a capacity search, a stall."""
    name, stats = test["name"], test.get("stats") or {}
    out: list[Note] = []
    if stats.get("reported"):
        out.append(Note("reported", name, f"{name}: as reported: the importing tool's own summary, no requests"))
    if stats.get("failed"):
        out.append(Note("failed", name, f"{name}: {stats['failed']} of {stats.get('requests')} requests failed",
                        warn=True))
    if stats.get("slo"):
        out.append(Note("slo", name, f"{name}: goodput {number(stats.get('goodput'), '.2f')} req/s: "
                                     f"{number(stats.get('good_requests'), 'd')} of "
                        f"{number(stats.get('completed'), 'd')} "
                                     f"requests met the SLO ({_slo_text(stats['slo'])})"))
    if stats.get("ttft_sched_ms"):
        out.append(Note("schedule", name,
                        f"{name}: from the schedule, TTFT p50 {_ms(stats['ttft_sched_ms'], 'median')} / p99 "
                        f"{_ms(stats['ttft_sched_ms'], 'p99')} ms, E2EL p50 "
                        f"{_ms(stats.get('e2el_sched_ms'), 'median')} ms "
                        f"(sent: TTFT p50 {_ms(stats.get('ttft_ms'), 'median')} ms); dispatch delay p50 "
                        f"{_ms(stats.get('dispatch_ms'), 'median')} / p99 {_ms(stats.get('dispatch_ms'), 'p99')} ms; "
                        f"chunks per token {number(stats.get('chunks_per_token'), '.2f')}"))
    reasoning = stats.get("reasoning")
    if reasoning:
        out.append(Note("reasoning", name,
                        f"{name}: {reasoning['requests']} of {number(stats.get('completed'), 'd')} requests thought: "
                        f"{reasoning['reasoning_tokens']} thinking and {reasoning['answer_tokens']} answer tokens; "
                        f"TTFAT p50 {_ms(stats.get('ttfat_ms'), 'median')} / p99 {_ms(stats.get('ttfat_ms'), 'p99')} "
                        f"ms "
                        f"(TTFT p50 {_ms(stats.get('ttft_ms'), 'median')} ms: the first token of either kind); "
                        f"per stream, thinking {number(reasoning.get('reasoning_rate'), '.1f')} tok/s, answer "
                        f"{number(reasoning.get('answer_rate'), '.1f')} tok/s",
                        lines=(REASONING_NOTE,)))
    series = stats.get("server_series")
    if series:
        out.append(Note("server series", name, f"{name}: {server_series_text(series)}"))
    overhead = stats.get("overhead")
    if overhead and overhead.get("pairs"):
        share = overhead.get("server_part_share")
        out.append(Note("overhead", name,
                        f"{name}: TTFT p50 {number(overhead['ttft_median_ms'], '.2f')} ms; the engine's prefill p50 "
                        f"{number(overhead['engine_prefill_median_ms'], '.2f')} ms ({overhead['in_process']}, in pdx's "
                        f"process); the server's own part (TTFT minus prefill, pair by pair) p50 "
                        f"{number(overhead['server_part_median_ms'], '.2f')} ms "
                        f"({number(share * 100 if share is not None else None, '.0f')}% "
                        f"of TTFT; {overhead['pairs']} pairs); the server's own prefill figure p50 "
                        f"{number(overhead.get('server_reported_prefill_median_ms'), '.2f')} ms"))
    elif overhead:
        out.append(Note("overhead", name, f"{name}: no TTFT split (a request failed)", warn=True))
    claim = stats.get("prefix_cache")
    if claim:
        if claim["holds"]:
            text = (f"{name}: the server's prefix cache served {claim['hits']:.0f} tokens over the test, as "
                    + ("random prompts should (a token a request by chance at most)" if claim["claim"] == "cold"
                       else "shared prefixes should"))
        elif claim["claim"] == "cold":
            text = (f"{name}: random prompts, yet the server's prefix cache served {claim['hits']:.0f} tokens: it has "
                    "seen these prompts before (run again with another --seed, or restart the server)")
        else:
            text = f"{name}: a shared prefix, yet no prefix-cache hits: is the server's prefix caching on?"
        out.append(Note("prefix cache", name, text, warn=not claim["holds"]))
    for turn in stats.get("turns") or []:
        out.append(Note("turns", name, f"{name}: turn {turn['turn']}: {turn['requests']} requests, prompt "
                                       f"{turn['prompt_mean']:.0f} tokens, TTFT p50 {turn['ttft_median_ms']:.1f} ms, "
                        f"from "
                                       f"the prefix cache {number(turn.get('cached_tokens_mean'), '.0f')} tokens"))
    saturation = stats.get("saturation")
    if saturation:
        samples = saturation.get("samples_stopped")
        out.append(Note("saturation", name,
                        f"{name}: stopped early at {saturation['at_s']:.1f} s: over-saturated (in the last "
                        f"{saturation['window_s']:g} s {saturation['due_in_window']} requests came due and "
                        f"{saturation['ended_in_window']} ended; scheduled TTFT "
                        f"{saturation['ttft_slope_ms_per_s']:+.1f} ms/s; {saturation.get('unsent_due', 0)} due "
                        f"requests never sent{f'; {samples} samples stopped' if samples and samples > 1 else ''}; "
                        f"test: {saturation['test']})", warn=True))
    if stats.get("capacity"):
        out.append(capacity_note(name, stats["capacity"]))
    if stats.get("stall"):
        out += _stall_notes(name, stats["stall"])
    return out + _client_notes(name, stats.get("clients")) + _energy_notes(test)


def _client_notes(name: str, clients: dict | None) -> list[Note]:
    """Several client processes, where and how well their clocks agreed; any client past its limit."""
    if not clients:
        return []
    busy = f"the busiest used {number(clients['cores_max'], '.2f')} of its core"
    if clients["late_p99_ms_max"] is not None:  # a closed loop has no schedule to be late on
        busy += f" and ran its schedule {clients['late_p99_ms_max']:.2f} ms late at p99"
    if clients["processes"] > 1:
        text = (f"{name}: {clients['processes']} client processes ({clients['pool']}, {clients['hosts']} "
                f"host{'s' if clients['hosts'] > 1 else ''}), their clocks within "
                f"{number(clients['clock_uncertainty_ms'], '.3f')} ms of the driver's; {busy}")
        if clients["died"]:
            text += f"; shard {', '.join(map(str, clients['died']))} died"
        return [Note("clients", name, text + ("; still past what a client times honestly: use more --clients"
                                               if clients["at_limit"] else ""), warn=clients["at_limit"])]
    if not clients["at_limit"]:
        return []
    return [Note("clients", name, f"{name}: pdx's client was at its limit ({busy.replace('the busiest', 'it')}): "
                                  "past what one client process times honestly; split the load with --clients N",
                 warn=True)]


SERVING_STATS = frozenset({
    "requests", "completed", "failed", "duration_s", "prompt_tokens", "output_tokens", "request_throughput",
    "output_throughput", "total_token_throughput", "per_stream_decode_rate", "chunks_per_token", "goodput",
    *DISTRIBUTION_KEYS,  # the distributions table, every percentile
    "slo", "good_requests",  # the SLO note
    "stall", "overhead", "turns", "prefix_cache", "capacity", "saturation", "reported",  # each its notes
    "energy",  # its column and note
    "clients",  # its note
    "reasoning",  # its note (a reasoning model's phases; TTFAT is a distribution)
    "server_series",  # its note, and the run page's chart under the timeline
})
SERVING = Kind("serve", "serving", (*SERVING_COLUMNS, ENERGY), SERVING_STATS | {"figures"},
               lambda test: serving_notes(test) + _figure_notes(test),
               "client-side latencies, throughput and goodput of a serving scenario")

KINDS: dict[str, Kind] = {kind.kind: kind for kind in (PREFILL, DECODE, BLENDED, SERVING)}

# Each serving scenario (pdx.domain.serving.spec.SCENARIOS) and the statistics of its own it adds to a load
# test's, each shown by serving_notes or run_notes.
SCENARIO_FIGURES: dict[str, tuple[str, ...]] = {
    "load": ("slo", "good_requests", "goodput", "turns", "prefix_cache", "saturation", "sweep (across tests)"),
    "stall": ("stall",),
    "cache-cold": ("cache (across tests)",),
    "cache-warm": ("cache (across tests)",),
    "capacity": ("capacity", "saturation"),
    "overhead": ("overhead",),
}


def describe(kind: str | None) -> Kind:
    """The description of a test kind (a test without one, as older records and hand-made ones have,
    is a pp/tg test). A kind with none is a bug: KeyError."""
    return KINDS[kind or "tg"]


def layout(test: dict) -> str:
    """"rates" (pp, tg, pp+tg) or "serving": the table a test's row goes in."""
    return "serving" if test.get("kind") == "serve" else "rates"


def unshown(test: dict) -> list[str]:
    """The statistics a test holds that its kind's description does not show (a bug: [] always)."""
    stats = test.get("stats") or {}
    return sorted(key for key in stats if key not in describe(test.get("kind")).shows)


# --- tables every reader lays out ----------------------------------------------------------------------

def _column(figure: Figure) -> Column:
    return Column(figure.key, figure.label, figure.unit, figure.keep, figure.about)


NOTES_COLUMN = Column("notes", "notes", None, keep=2, left=True, wraps=True,
                      about="what the conditions say against the row, failures, a tool's own summary")


def serving_table(tests: list[dict]) -> Table:
    """One row per serving test: every column of :data:`SERVING`'s that any test has a figure in,
    and the notes beside the row (the conditions it ran under, failures)."""
    columns = [Column("test", "test", keep=0, left=True), *map(_column, SERVING.columns), NOTES_COLUMN]
    rows = []
    for test in tests:
        stats = test.get("stats") or {}
        name = test["name"] + (" (as reported)" if stats.get("reported") else "")
        if not stats:
            rows.append(Row(name, [], test["status"], test.get("error")))
            continue
        said = ([f"{test['status']}: {test.get('error') or ''}".strip()] if test["status"] != "ok" else []) \
            + condition_warnings(test)
        cells = [Cell(name, test["name"])]
        cells += [Cell(f.text(stats), f.value(stats)) for f in SERVING.columns]
        cells.append(Cell("; ".join(said), "; ".join(said), warn=bool(said)))
        rows.append(Row(name, cells, test["status"], test.get("error")))
    return Table("serving", "serving", columns, rows, ITL_NOTE).without_empty_columns()


def _percentiles(dists: list[dict]) -> list[str]:
    keys = {k for d in dists for k in d if k.startswith("p") and k[1:].replace(".", "", 1).isdigit()}
    return sorted(keys, key=lambda k: float(k[1:]))


def distribution_table(tests: list[dict]) -> Table | None:
    """Every latency distribution of every test that has them (serving tests, and pp/tg over HTTP):
    count, mean, stddev, min, median, each percentile, max, in ms."""
    found = []
    for test in tests:
        stats = test.get("stats") or {}
        source = stats if test.get("kind") == "serve" else stats.get("serving") or {}
        for key, label, about in DISTRIBUTIONS:
            dist = source.get(key)
            if isinstance(dist, dict) and any(v is not None for k, v in dist.items() if k != "n"):
                found.append((test["name"], label, about, dist))
    if not found:
        return None
    percentiles = _percentiles([d for *_, d in found])
    columns = [Column("test", "test", keep=0, left=True), Column("latency", "latency", keep=0, left=True),
               Column("n", "n", keep=6, about="how many: requests (for ITL, gaps between tokens)"),
               Column("mean", "mean", "ms", keep=4),
               Column("std", "std", "ms", keep=7), Column("min", "min", "ms", keep=6),
               Column("median", "median", "ms", keep=0)]
    columns += [Column(p, p, "ms", keep=1 if p == percentiles[-1] else 3) for p in percentiles if p != "p50"]
    columns.append(Column("max", "max", "ms", keep=5))
    rows = []
    for name, label, about, dist in found:
        cells = [Cell(name, name), Cell(label, label, title=about)]
        for column in columns[2:]:
            value = dist.get(column.key) if column.key != "median" else (
                dist.get("median") if dist.get("median") is not None else dist.get("p50"))
            cells.append(Cell(number(value, "d") if column.key == "n" else number(value), value))
        rows.append(Row(name, cells))
    return Table("latency", "latency distributions", columns, rows,
                 "every request's latency, in milliseconds; TTFT and E2EL from the schedule count the wait for a "
                 "slot").without_empty_columns()


def tests_notes(run: dict) -> list[Note]:
    """Each test's own notes, in test order, from its kind's description."""
    return [note for test in run["tests"] for note in describe(test.get("kind")).notes(test)]


def _uncounted_speculation(run: dict) -> list[Note]:
    """A speculating run's decode tests whose engine gave no draft counts: said, not left blank."""
    method = ((run.get("engine") or {}).get("settings") or {}).get("speculation")
    if not method:
        return []
    silent = [t["name"] for t in run["tests"] if t.get("kind") != "pp" and t.get("n_gen") and t.get("stats")
              and not t["stats"].get("speculation")]
    if not silent:
        return []
    return [Note("speculation", None, f"speculative decoding ({method.get('method') or 'the server default'}) on, but "
                 f"the engine gave no draft counts for {', '.join(silent)}: what it drafted and accepted there is "
                 "unknown", warn=True)]


def run_notes(run: dict) -> list[Note]:
    """Figures across the tests of a run: a concurrency sweep's knee, the prefix cache's saving, a
    speculating engine that did not count its drafts."""
    out = _uncounted_speculation(run)
    sweep = sweep_summary(run["tests"])
    if sweep:
        knee = sweep["measured_knee"]
        predicted = (run.get("ceiling_basis") or {}).get("knee_batch")
        points = ", ".join(f"c={p['concurrency']} {number(p['output_throughput'])}" for p in sweep["points"])
        out.append(Note("sweep", None,
                        f"concurrency sweep: measured knee at {knee if knee else 'none within the sweep'} "
                        f"(aggregate rate gains under half of linear past it); the ceilings predict decode turns "
                        f"compute-bound at batch {f'~{predicted:.3g}' if predicted else '(unknown)'}",
                        lines=(f"output tok/s by concurrency: {points}",)))
    cache = cache_summary(run["tests"])
    if cache:
        saving = cache.get("ttft_saving")
        out.append(Note("cache", None,
                        f"prefix cache: TTFT p50 cold {number(cache['cold_ttft_median_ms'])} ms, warm "
                        f"{number(cache['warm_ttft_median_ms'])} ms (saving "
                        f"{number(saving * 100 if saving is not None else None, '.0f')}%); server hits cold "
                        f"{number(cache['cold_prefix_hits'], '.0f')}, warm {number(cache['warm_prefix_hits'], '.0f')}"))
    return out


def serving_headlines(run: dict) -> list[dict]:
    """The figures a run page's cards show of serving tests: a capacity found, else the first test's
    output rate and TTFT; {test, label, unit, text}."""
    cards = []
    for test in run["tests"]:
        stats = test.get("stats") or {}
        if test.get("kind") != "serve" or not stats:
            continue
        found = stats.get("capacity")
        if found and found.get("capacity") is not None:
            unit = "concurrency" if found.get("axis") == "concurrency" else "req/s"
            cards.append({"test": test["name"], "label": "capacity", "unit": unit,
                          "text": f"{found['capacity']:.3g}", "note": f"p{found.get('percentile', 0):g} "
                                                                      f"{_slo_text(found.get('slo') or {})}"})
        elif stats.get("output_throughput") is not None:
            ttft = _median("ttft_ms")(stats)
            cards.append({"test": test["name"], "label": "output", "unit": "tok/s",
                          "text": number(stats["output_throughput"]),
                          "note": f"TTFT p50 {number(ttft)} ms" if ttft is not None else ""})
    return cards[:4]


@dataclass(slots=True)
class Shown:
    """Everything a run shows besides its pp/tg rates table: the serving table, the latency
    distributions, each test's notes, the notes across tests, and the conditions."""

    serving: Table | None
    latency: Table | None
    notes: list[Note] = field(default_factory=list)
    conditions: list[tuple[str, str, bool]] = field(default_factory=list)


def shown(run: dict) -> Shown:
    serving = [t for t in run["tests"] if layout(t) == "serving"]
    return Shown(serving_table(serving) if serving else None, distribution_table(run["tests"]),
                 tests_notes(run) + run_notes(run), conditions(run))

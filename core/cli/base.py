"""The top-level group and options shared by several commands."""

from __future__ import annotations

import json

import click

import pdx
from pdx.domain.energy.figures import DEFAULT_CURRENCY, DEFAULT_PRICE_KWH, parse_price
from pdx.contract.errors import PdxError
from pdx.contract.numbers import MAX_FLOAT, MAX_INT, parse_float, parse_int


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(pdx.__version__, prog_name="pdx")
def cli() -> None:
    """pdx: prefill and decode, measured apart, on any engine."""


registry_option = click.option(
    "--registry",
    envvar="PDX_REGISTRY",
    metavar="URL",
    help="Registry database: a SQLAlchemy URL or a SQLite file path [env PDX_REGISTRY; default: user data dir].",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
engine_option = click.option("-o", "--option", "options", multiple=True, metavar="KEY=VALUE",
                             help="Engine option (see `pdx backends`); repeatable.")


class Label(click.ParamType):
    """A label stored with a run (``--tag``): text UTF-8 can hold (an argument the OS could not decode
    arrives with lone surrogates), at most as long as the registry keeps."""

    name = "text"

    def __init__(self, limit: int = 128) -> None:
        self.limit = limit

    def convert(self, value, param, ctx):
        text = str(value)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            shown = text.encode("utf-8", "backslashreplace").decode()[:60]
            self.fail(f"'{shown}' is not UTF-8 text (a byte the system could not decode)", param, ctx)
        if len(text) > self.limit:
            self.fail(f"{len(text)} characters is over the limit of {self.limit}", param, ctx)
        if not text.strip():  # an empty label names nothing: stored, it would be a tag no one can see
            self.fail("is empty: give some text", param, ctx)
        return text


tag_option = click.option("--tag", "tags", multiple=True, type=Label(), help="Label the run(s); repeatable.")
# The keys are pdx.registry.where's WHERE_KEYS, written out: importing the registry here would load
# SQLAlchemy for every command.
where_option = click.option(
    "--where", "where", multiple=True, metavar="KEY=VALUE[,...]",
    help="Only runs matching every pair; keys: backend, model, hardware, tag, status, origin (repeatable).")


def echo_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def server_options(command):
    """--url, --api-key and --server-args: for backends that measure a server."""
    for option in reversed((
        click.option("--url", metavar="URL", help="A running server to measure (server backends; same as -o url=URL)."),
        click.option("--api-key", envvar="PDX_API_KEY", metavar="KEY",
                     help="API key sent to the server as a bearer token [env PDX_API_KEY]; never stored or shown."),
        click.option("--server-args", multiple=True, metavar="ARGS",
                     help="Flags for the server pdx starts, one quoted string; repeat for one run each."),
    )):
        command = option(command)
    return command


class Price(click.ParamType):
    """A price per kWh, with an optional currency code: 0.32, '0.32 EUR'."""

    name = "PRICE"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return parse_price(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def warn(line: str) -> None:
    """One line on stderr, before a command's work: what an option given will not do, and what to do."""
    click.echo(click.style(line, fg="yellow"), err=True)


def given(ctx: click.Context, name: str) -> bool:
    """Whether the user set option ``name`` (on the command line or through its environment variable)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source not in (click.core.ParameterSource.DEFAULT,
                                                 click.core.ParameterSource.DEFAULT_MAP)


def warn_energy(ctx: click.Context, energy: bool, price: tuple[float, str] | None, url: str | None) -> None:
    """A line each for --energy and --price-kwh where this run will measure no energy."""
    from pdx import api

    for line in api.energy_notices(energy, given(ctx, "energy"), price, remote=bool(url)):
        warn(line)


def energy_options(command):
    """--energy/--no-energy and --price-kwh: energy per token where this machine has a meter."""
    for option in reversed((
        click.option("--energy/--no-energy", default=True, show_default=True,
                     help="Read this machine's energy meters (see `pdx hw`) around every timed repetition: J/token, "
                          "W, tokens/J per test, with idle power read first; nothing when it has none."),
        click.option("--price-kwh", type=Price(), metavar="PRICE",
                     help=f"Electricity price per kWh for the cost per million tokens, e.g. 0.32 or '0.32 EUR'. "
                          f"[default: {DEFAULT_PRICE_KWH} {DEFAULT_CURRENCY}, said with every cost]"),
    )):
        command = option(command)
    return command


class Integer(click.ParamType):
    """A whole number through :func:`pdx.contract.numbers.parse_int`: ASCII digits, bounded, one line naming
    the option."""

    name = "integer"

    def __init__(self, min: int | None = 0, max: int | None = None) -> None:
        self.min, self.max = min, max

    def convert(self, value, param, ctx):
        try:
            return parse_int(value, _flag(param), self.min, MAX_INT if self.max is None else self.max)
        except PdxError as exc:
            self.fail(exc.message.partition(": ")[2], param, ctx)


class IntegerList(Integer):
    """``N[,N...]``: each a whole number as :class:`Integer` reads one, in the same one-line errors."""

    name = "integers"

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        return [super(IntegerList, self).convert(item.strip(), param, ctx) for item in str(value).split(",")]


class Number(click.ParamType):
    """A finite number through :func:`pdx.contract.numbers.parse_float`: never NaN or infinite, bounded."""

    name = "number"

    def __init__(self, min: float | None = None, max: float | None = None, min_open: bool = False,
                 max_open: bool = False) -> None:
        self.min, self.max, self.min_open, self.max_open = min, max, min_open, max_open

    def convert(self, value, param, ctx):
        try:
            number = parse_float(value, _flag(param), self.min, MAX_FLOAT if self.max is None else self.max,
                                 self.min_open)
        except PdxError as exc:
            self.fail(exc.message.partition(": ")[2], param, ctx)
        if self.max_open and number == self.max:
            self.fail(f"{value!r} is too large; it must be below {self.max:g}", param, ctx)
        return number


def _flag(param) -> str:
    return max(param.opts, key=len) if param is not None and param.opts else "value"

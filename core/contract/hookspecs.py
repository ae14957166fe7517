"""The hooks a pdx plugin implements: the plugin contract.

A plugin is a module (or object) named by an entry point in the ``pdx``
group of its distribution's metadata::

    [project.entry-points.pdx]
    myengine = "pdx_myengine"

It implements some of the hooks below as module-level functions, marked with
``@pdx.hookimpl`` (undecorated functions named ``pdx_*`` count too, so a
misspelled hook is reported rather than ignored). A backend class it
registers follows :class:`pdx.contract.backend.Backend`. The guide for plugin authors
is ``docs/plugins.rst``; ``tests/test_plugin_guide.py`` keeps it and this
module in step.

Versioning. Adding a hook, or a keyword argument to one, never breaks a
plugin: pluggy passes each implementation only the arguments it names, a
plugin that does not implement a hook is never called for it, and the
``register`` callback accepts keyword arguments it does not know. A hook or
an argument that is renamed or removed stays in this module for one more
release, marked ``@hookspec(warn_on_impl=PdxDeprecationWarning(...))`` or
``warn_on_impl_args={"old": PdxDeprecationWarning(...)}``: a plugin that still
uses it loads and works, and the warning is shown by ``pdx plugins`` and
``pdx backends`` and reported by ``pdx.testing``. Then it goes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import pluggy

if TYPE_CHECKING:
    import click

    from pdx.contract.backend import Backend
    from pdx.contract.chart import ChartMaker
    from pdx.contract.engine_build import EngineBuilder
    from pdx.contract.importer import Importer
    from pdx.contract.page import SitePage
    from pdx.contract.quantizer import Quantizer
    from pdx.contract.meter import MeterSource

hookspec = pluggy.HookspecMarker("pdx")
hookimpl = pluggy.HookimplMarker("pdx")


class PdxDeprecationWarning(DeprecationWarning):
    """A hook or hook argument a plugin uses is going away; the message says since when and what replaces it."""


@hookspec
def pdx_register_backends(register: Callable[[type["Backend"]], None]) -> None:
    """Register backend classes.

    Called once per process, the first time pdx needs the list of backends
    (``pdx backends``, ``pdx bench``, :func:`pdx.base.plugin_manager.backends`);
    the result is cached. Import your engine inside the backend's methods,
    never here: this hook runs for every ``pdx`` command.

    :param register: call ``register(BackendClass)`` once per backend. The
        class must subclass :class:`pdx.contract.backend.Backend`, set ``name`` and
        ``engine``, and implement ``availability``, ``load`` and ``run``;
        anything else is refused and reported against your plugin. A name
        already taken by another plugin is left out, with a warning.
    :return: nothing; only the ``register`` calls count.

    Example::

        @hookimpl
        def pdx_register_backends(register):
            from pdx_example.backend import ExampleLlamaServer

            register(ExampleLlamaServer)

    .. versionadded:: 0.1
    """


@hookspec
def pdx_register_commands(cli: "click.Group") -> None:
    """Add commands (or command groups) to the ``pdx`` command line.

    Called once when the ``pdx`` command line is assembled, before
    arguments are parsed, so it runs for every ``pdx`` invocation: keep it
    cheap and import heavy modules inside the command. A command raises
    :class:`pdx.contract.errors.PdxError` for anything the user can fix; ``pdx``
    prints it as one line.

    :param cli: the top-level ``pdx`` click group; call ``cli.add_command``.
    :return: nothing.

    Example::

        @hookimpl
        def pdx_register_commands(cli):
            from pdx_example.commands import example

            cli.add_command(example)

    .. versionadded:: 0.1
    """


@hookspec
def pdx_bench_options() -> list["click.Option"]:
    """Return extra ``pdx bench`` and ``pdx serve-bench`` options that set engine options.

    Called once when the command line is assembled. When the user passes
    one of these options, its parameter name becomes the engine-option key,
    exactly as ``-o KEY=VALUE`` would set it (``--llama-bench PATH`` is
    ``-o llama_bench=PATH``); list the key in your backend's ``options``.

    :return: click options; their defaults must be ``None`` (an option the
        user did not pass sets nothing).

    Example::

        @hookimpl
        def pdx_bench_options():
            return [click.Option(["--example-server", "server"], metavar="PATH", default=None,
                                 help="llama-server binary for example-llama-server (-o server=PATH).")]

    .. versionadded:: 0.1
    """
    raise NotImplementedError  # a specification: pluggy calls plugins' implementations, never this


@hookspec
def pdx_report_templates() -> list[str]:
    """Return folders of Jinja templates that override pdx's report templates.

    Called each time a report or site is rendered (``pdx report``, ``pdx
    publish``, ``pdx compare --html``). A template found in one of these
    folders replaces pdx's template of the same name (``run.html``, a partial
    such as ``_footer.html``, or ``pdx.css``); a user's ``--templates``
    folder still comes first. Templates are Jinja2 with autoescaping on.

    :return: folder paths.

    Example::

        @hookimpl
        def pdx_report_templates():
            return [str(Path(__file__).parent / "templates")]

    .. versionadded:: 0.1
    """
    raise NotImplementedError  # a specification: pluggy calls plugins' implementations, never this


@hookspec
def pdx_register_charts(register: Callable[["ChartMaker"], None]) -> None:
    """Register chart makers for report and site pages.

    A chart maker is a function ``make(view)`` given a
    :class:`pdx.reports.charts.chartset.ChartView` (``runs``: the page's runs as
    ``pdx show --json`` prints them, newest first: a report's every run; on a
    site's machine and model pages, the runs that hold each series' newest
    measurement of each test and each configuration's best and newest two
    (:mod:`pdx.reports.site.runs`), which is what a chart of many runs plots;
    ``namer``: the page's label for a run;
    ``headline``: phase -> headline test; ``per_test``) and returning a
    :class:`pdx.contract.chart.ChartSpec` (``name``, ``title``, ``note``,
    ``vega_lite``; a dict with those keys will do) or ``None`` when the runs
    hold nothing for it to draw. pdx renders the Vega-Lite spec to inline SVG.

    :param register: call ``register(make)`` once per chart maker.
    :return: nothing; only the ``register`` calls count.

    Example::

        @hookimpl
        def pdx_register_charts(register):
            from pdx_example.charts import decode_samples

            register(decode_samples)

    .. versionadded:: 0.1
    """


@hookspec
def pdx_register_pages(register: Callable[["SitePage"], None]) -> None:
    """Register pages for the sites ``pdx publish`` builds.

    A page is a :class:`pdx.contract.page.SitePage` (``name``: a slug;
    ``title``: the text of its link in every page's navigation; ``build``: a
    function of one argument, a :class:`pdx.reports.site.pageset.PluginSite`).
    ``build(site)`` is called once per build, after pdx's own pages; it reads
    ``site.runs`` (the runs the site keeps whole) and ``site.listed`` (every
    run's listing) and writes with ``site.page(path, template, title, data,
    **context)``: ``NAME.html`` and ``NAME/*.html`` only, each rendered from a
    template of your ``pdx_report_templates`` folder (``{% extends
    "base.html" %}``, its ``main`` block) with ``data`` written beside it as
    JSON. pdx's own hub pages register through this hook too. A page whose
    build raises is left out with a warning naming your plugin; so is one whose
    name another page holds.

    :param register: call ``register(SitePage(...))`` once per page.
    :return: nothing; only the ``register`` calls count.

    Example::

        @hookimpl
        def pdx_register_pages(register):
            from pdx.contract.page import SitePage
            from pdx_example.pages import backends_page

            register(SitePage("backends", "backends", backends_page))

    .. versionadded:: 0.1
    """


@hookspec
def pdx_register_importers(register: Callable[["Importer"], None]) -> None:
    """Register formats ``pdx import`` reads: call ``register(Importer(...))`` once per format.

    Called once per process, the first time pdx needs its formats (``pdx
    import``). An :class:`pdx.registry.importers.kit.Importer` names the format (its
    ``--format`` value), reads a file into run records and may detect it for
    ``--format auto``. Its records go through the same validation as every
    import before anything is stored; a name another plugin took is left out,
    with a warning on yours.

    :param register: call ``register(importer)`` with a :class:`pdx.registry.importers.kit.Importer`.
    :return: nothing; only the ``register`` calls count.

    Example::

        @hookimpl
        def pdx_register_importers(register):
            from pdx_example.timings import IMPORTER

            register(IMPORTER)

    .. versionadded:: 0.1
    """


@hookspec
def pdx_register_quantizers(register: Callable[["Quantizer"], None]) -> None:
    """Register GGUF quantisers: call ``register(Quantizer(...))`` once per tool.

    ``pdx model synth --type T`` writes f32, f16, q8_0 and q4_0 itself. For any
    other type (K-quants, IQ, MXFP4: an engine's own layouts) it writes f16 and
    hands the file to the first quantiser whose ``types`` hold T (pdx's own
    plugins first), as a user would run the engine's tool. A
    :class:`pdx.domain.synth.quantizers.Quantizer` has a ``name``, its ``types``
    (upper case) and ``quantize(source, dest, type)``, which writes ``dest`` or
    raises :class:`pdx.contract.errors.PdxError` saying why.

    :param register: call ``register(quantizer)``.
    :return: nothing; only the ``register`` calls count.

    Example::

        @hookimpl
        def pdx_register_quantizers(register):
            from pdx.domain.synth.quantizers import Quantizer
            from pdx_example.quantize import TYPES, quantize

            register(Quantizer("ik-llama-quantize", TYPES, quantize))

    .. versionadded:: 0.1
    """


@hookspec
def pdx_register_meters(register: Callable[["MeterSource"], None]) -> None:
    """Register energy meter sources, read around every timed repetition of ``pdx bench``.

    A source is a :class:`pdx.contract.meter.MeterSource` (``name``, ``find``).
    ``find()`` is called once per benchmark (and by ``pdx hw``); it returns the
    :class:`pdx.contract.meter.Meter` objects present on this machine, each one
    cumulative counter (``read()``: joules since an origin of its choosing,
    never decreasing) with what it ``covers`` (one of
    :data:`pdx.contract.meter.COVERS`), or raises
    :class:`pdx.contract.meter.MeterUnavailable` with a few words on why there
    are none. pdx adds a machine's meters up, so they must not count the
    same joules twice; a meter that covers the ``"machine"`` (a wall plug) is
    used alone. A meter that raises while a benchmark runs is dropped from
    it, with its reason stored; the benchmark goes on.

    :param register: call ``register(MeterSource(...))`` once per source.
    :return: nothing; only the ``register`` calls count.

    Example::

        @hookimpl
        def pdx_register_meters(register):
            from pdx.contract.meter import MeterSource
            from pdx_example.meter import find_plug

            register(MeterSource("wall-plug", find_plug))

    .. versionadded:: 0.1
    """


@hookspec
def pdx_register_engine_builders(register: Callable[["EngineBuilder"], None]) -> None:
    """Register how to build an engine at a given version: call ``register(EngineBuilder(...))``.

    ``pdx bisect --engine NAME`` builds commits of the engine's source with
    ``builder.commit(source, commit, build_dir, say)``; ``pdx bench
    --engine-version A,B`` builds or finds releases with ``builder.release(version,
    say)``. Each returns a :class:`pdx.contract.engine_build.BuiltEngine`: the
    backend options that run that build on ``builder.backend`` (a llama-bench
    path, say), its label, and whether it was cached. Either function may be
    None where the engine offers no such build; a build that fails raises
    :class:`pdx.contract.errors.PdxError` saying why (and where its log is).

    :param register: call ``register(builder)`` once per engine.
    :return: nothing; only the ``register`` calls count.

    Example::

        @hookimpl
        def pdx_register_engine_builders(register):
            from pdx.contract.engine_build import EngineBuilder
            from pdx_example.versions import release

            register(EngineBuilder("example", "example-llama-server", release=release,
                                   releases="llama-server builds in PDX_EXAMPLE_SERVERS/VERSION"))

    .. versionadded:: 0.1
    """

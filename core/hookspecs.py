"""The hooks a pdx plugin implements.

A plugin is any module or object registered under the ``pdx`` entry-point
group; it implements some of these hooks with ``@pdx.hookimpl``. Adding a
hook or a keyword argument to one never breaks an existing plugin: pluggy
passes each implementation only the arguments it names, and registration
goes through callbacks (``register``) that can grow keyword arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import pluggy

if TYPE_CHECKING:
    import click

    from pdx.backend import Backend

hookspec = pluggy.HookspecMarker("pdx")
hookimpl = pluggy.HookimplMarker("pdx")


@hookspec
def pdx_register_backends(register: Callable[[type["Backend"]], None]) -> None:
    """Register backend classes.

    :param register: call ``register(BackendClass)`` once per backend; the
        class's ``name`` is what users pass to ``--backend``.

    .. versionadded:: 0.1
    """


@hookspec
def pdx_register_commands(cli: "click.Group") -> None:
    """Add commands (or command groups) to the ``pdx`` command line.

    :param cli: the top-level ``pdx`` click group; call ``cli.add_command``.

    .. versionadded:: 0.1
    """


@hookspec
def pdx_bench_options() -> list["click.Option"]:
    """Return extra ``pdx bench`` options that set engine options.

    Each option's parameter name becomes the engine-option key (as with
    ``-o KEY=VALUE``) when the user passes it; ``--llama-bench PATH`` is
    ``-o llama_bench=PATH``.

    :return: click options; their defaults must be ``None``.

    .. versionadded:: 0.1
    """


@hookspec
def pdx_report_templates() -> list[str]:
    """Return folders of Jinja templates that override pdx's report templates.

    A template found in one of these folders replaces pdx's template of the
    same name (``run.html``, a partial such as ``_footer.html``, or
    ``pdx.css``); a user's ``--templates`` folder still comes first.

    :return: folder paths.

    .. versionadded:: 0.1
    """

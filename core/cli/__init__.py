"""The ``pdx`` command line: thin commands over :mod:`pdx.api`.

The click group is assembled on first use by :func:`build_cli`, after the
plugin manager has loaded, so plugins can add commands and bench options.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading

import click

from pdx.base import plugin_manager
from pdx.cli import (backends, bench, bisect, cache, ceiling, hardware, hub, models, plugins, reports, repro, runs,
                     serve,
                     share)
from pdx.cli.base import cli
from pdx.contract.errors import PdxError, Terminated
from pdx.base.secrets import scrub_text  # a message that quotes a URL or a flag shows no secret

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


def build_cli() -> click.Group:
    for module in (bench, bisect, serve, runs, models, backends, plugins, hardware, ceiling, repro, share, reports, hub,
                   cache):
        module.register(cli)
    # Plugin by plugin: one that raises or clashes is reported by `pdx plugins`; the rest still load.
    for record, options, _ in plugin_manager.call_each("pdx_bench_options"):
        try:
            for command in ("bench", "serve-bench"):
                bench.add_plugin_options(cli.commands[command], options or [], record.name)
        except PdxError as exc:
            plugin_manager.drop(record, f"pdx_bench_options: {exc.message}")
    for _ in plugin_manager.call_each("pdx_register_commands", cli=cli):
        pass
    return cli


def fail(message: str, code: int = 2) -> None:
    from pdx.reports.display.text import printable

    click.echo(f"pdx: error: {printable(scrub_text(message))}", err=True)
    sys.exit(code)


def _raise_terminated(signum: int, _frame) -> None:
    raise Terminated(signum)


def _stop_on_signals() -> None:
    if threading.current_thread() is not threading.main_thread():  # main() called from a thread: a host's
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) == signal.SIG_DFL:  # one ignored stays so (`nohup pdx bench ...`)
            signal.signal(signum, _raise_terminated)


def _warn_left_out() -> None:
    """One line per registry whose damaged runs a command left out (pdx.api.LEFT_OUT)."""
    api = sys.modules.get("pdx.api")
    if api is None:
        return

    for shown, left in api.LEFT_OUT:
        if left:
            named = "; ".join(f"{run_id[:12]} ({why})" for run_id, why in list(left.items())[:3])
            more = f"; and {len(left) - 3} more" if len(left) > 3 else ""
            click.echo(f"pdx: warning: {len(left)} run{'s' if len(left) != 1 else ''} in {scrub_text(shown)} could "
                       f"not be read and {'are' if len(left) != 1 else 'is'} left out: {named}{more}; the registry "
                       "was altered or damaged: restore it from a copy, or export the runs that read", err=True)
    api.LEFT_OUT.clear()


# What writing to a full disk, a closed pipe or a lost terminal raises: a write no pdx code caught
# (its own files are written through pdx.base.files, whose errors are one line already) is the output's.
_OUTPUT_ERRORS = {errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EDQUOT, errno.EFBIG}


def _output_failed(exc: OSError) -> bool:
    """Whether ``exc`` is the command's output failing; then standard output is pointed at
    /dev/null, so that Python's last flush on the way out raises nothing more."""
    if exc.errno not in _OUTPUT_ERRORS or exc.filename is not None:
        return False
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's captured stdout)
        pass
    return True


def main(argv: list[str] | None = None) -> None:
    _stop_on_signals()
    if "pdx.api" in sys.modules:  # main called again in one process (tests): only this command's
        sys.modules["pdx.api"].LEFT_OUT.clear()
    try:
        app = build_cli()
        code = app.main(args=argv, prog_name="pdx", standalone_mode=False)
        _warn_left_out()
    except PdxError as exc:
        fail(str(exc), exc.exit_code)
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "pdx"
        fail(f"{exc.format_message()} (see `{command} --help`)", exc.exit_code)
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except (KeyboardInterrupt, click.Abort) as exc:
        # click turns the KeyboardInterrupt of a command into Abort; the signal is on its cause.
        cause = exc if isinstance(exc, Terminated) else exc.__cause__
        if isinstance(cause, Terminated):
            click.echo(f"pdx: {cause}; completed tests are saved", err=True)
            sys.exit(128 + cause.signum)
        click.echo("pdx: interrupted; completed tests are saved", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except OSError as exc:
        if not _output_failed(exc):
            raise
        fail(f"cannot write the output: {exc.strerror or exc}", 1)
    if isinstance(code, int):  # ctx.exit(n) in a command, under standalone_mode=False
        sys.exit(code)

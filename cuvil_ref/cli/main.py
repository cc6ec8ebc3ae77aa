"""The ``cuvil`` click group and its error policy.

Without ``--debug`` every :class:`CuvilError` (and every ``OSError`` about a file) is printed as
one red ``error: ...`` line on stderr and the command exits with status 1; usage errors exit with
status 2 (click's own handling). With ``--debug`` (or ``CUVIL_DEBUG=1``) the traceback is printed
instead, still with status 1. Errors that are neither are bugs and keep their traceback.
"""

from __future__ import annotations

import traceback
from typing import Any

import click

from cuvil_ref import __version__
from cuvil_ref.cli import (
    bench_cmd,
    compile_cmd,
    inspect_cmd,
    pack_cmd,
    rollout_cmd,
    run_cmd,
    serve_cmd,
    sign_cmd,
)
from cuvil_ref.cli import targets as targets_cmd
from cuvil_ref.cli.render import print_error
from cuvil_ref.errors import CuvilError

USER_ERRORS: tuple[type[BaseException], ...] = (CuvilError, OSError)


class CuvilGroup(click.Group):
    """A click group that turns user errors into one line (or a traceback with ``--debug``)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except USER_ERRORS as exc:
            if ctx.meta.get("cuvil.debug"):
                click.echo(traceback.format_exc(), err=True, nl=False)
            else:
                print_error(_describe(exc))
            ctx.exit(1)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, CuvilError):
        where = f" {exc.filename!r}" if exc.filename else ""
        return f"{exc.strerror or exc}{':' if where else ''}{where}"
    return str(exc) or type(exc).__name__


@click.group(cls=CuvilGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--debug",
    is_flag=True,
    envvar="CUVIL_DEBUG",
    help="Show tracebacks instead of one-line errors.",
)
@click.version_option(__version__, prog_name="cuvil", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Cuvil: compile PyTorch models for inference targets supplied by kernel packs."""
    ctx.meta["cuvil.debug"] = debug


cli.add_command(targets_cmd.targets)
cli.add_command(targets_cmd.ops)
cli.add_command(compile_cmd.compile_command)
cli.add_command(inspect_cmd.inspect_command)
cli.add_command(run_cmd.run_command)
cli.add_command(bench_cmd.bench_command)
cli.add_command(sign_cmd.sign)
cli.add_command(sign_cmd.keygen)
cli.add_command(sign_cmd.verify_command)
cli.add_command(pack_cmd.pack)
cli.add_command(serve_cmd.serve_command)
cli.add_command(serve_cmd.add_model_command)
cli.add_command(rollout_cmd.rollout)


def main() -> None:
    """Console-script entry point (``cuvil = "cuvil_ref.cli.main:main"``)."""
    cli(prog_name="cuvil")


if __name__ == "__main__":
    main()

"""``cuvil run FILE --input x.npy``: load a verified artifact, compile it for a target, run it."""

from __future__ import annotations

import click
import numpy as np

from cuvil_ref.cli.arrays import read_inputs, write_outputs
from cuvil_ref.cli.params import target_option
from cuvil_ref.cli.render import stdout_console, table


def array_stats(a: np.ndarray) -> tuple[object, object, object, object]:
    """min, max, mean, std over the finite elements (``-`` for an empty or non-numeric array)."""
    if a.size == 0 or a.dtype == np.bool_:
        return (None, None, None, None)
    x = a.astype(np.float64)
    finite = x[np.isfinite(x)]
    if finite.size == 0:
        return (None, None, None, None)
    return (float(finite.min()), float(finite.max()), float(finite.mean()), float(finite.std()))


@click.command("run")
@click.argument("file")
@click.option(
    "--input",
    "-i",
    "inputs",
    metavar="FILE",
    multiple=True,
    required=True,
    help="An input array (.npy), or several (.npz, in input order); repeatable.",
)
@target_option()
@click.option(
    "--trusted-key",
    "trusted_keys",
    metavar="PEM",
    multiple=True,
    help="Refuse the artifact unless one of these public keys signed it.",
)
@click.option("-o", "--output", metavar="FILE", help="Save the outputs (.npy for one, .npz).")
def run_command(
    file: str,
    inputs: tuple[str, ...],
    target: str,
    trusted_keys: tuple[str, ...],
    output: str | None,
) -> None:
    """Run the artifact FILE on input arrays and print each output's shape and statistics."""
    from cuvil_ref.artifacts import load_module
    from cuvil_ref.lowering.compiler import compile_module

    module = load_module(file, trusted_keys=list(trusted_keys) or None)
    arrays = read_inputs(inputs, module)
    program = compile_module(module, target)
    outs = program.run(arrays)
    names = [v.name for v in module.outputs]
    rows = [
        (i, f"%{n}", list(o.shape), str(o.dtype), *array_stats(o))
        for i, (n, o) in enumerate(zip(names, outs))
    ]
    out = stdout_console()
    out.print(
        table(
            f"outputs on target '{program.target.name}'",
            ("#", "value", "shape", "dtype", "min", "max", "mean", "std"),
            rows,
        )
    )
    if output:
        write_outputs(output, outs, names)
        click.echo(f"saved {output}")

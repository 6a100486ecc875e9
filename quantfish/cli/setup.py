"""``quantfish kernel``, ``quantfish warm`` and ``quantfish cache``: what an install prepares, and its cache.

The C kernel and the compiled code are made on first use anyway; these commands make them ahead of time (``make
install`` runs both), so that the first game starts at once, and show or clear the cache folder they live in.
"""
from __future__ import annotations

import shutil
import sys

import click


@click.command("kernel")
@click.option("--force", is_flag=True, help="Rebuild even if the library is up to date.")
@click.option("--cc", default=None, help="C compiler (default: $CC, gcc, cc).")
@click.option("--quiet", is_flag=True, help="Print nothing on success.")
def kernel_command(force, cc, quiet):
    """Build the C NNUE kernel into the user cache folder (without it the engine runs its Numba path)."""
    from quantfish.nnue.kernel.build import KernelBuildError, build
    try:
        res = build(force=force, cc=cc, verbose=not quiet)
    except KernelBuildError as exc:
        raise click.ClickException(str(exc)) from None
    if not quiet:
        what = f"built (variants: {', '.join(res['variants'])})" if res["built"] else "up to date"
        click.echo(f"{res['path']}: {what}; id {res['build_id']}")


@click.command("warm", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def warm_command(args):
    """Compile the engine's code once, so that the first game starts at once (about 1.5 minutes on 2 cores)."""
    from quantfish.cli.warm import main
    try:
        sys.exit(main(list(args)))
    except KeyboardInterrupt:
        click.echo("interrupted: what was compiled stays in the cache", err=True)
        sys.exit(130)


@click.group("cache")
def cache_group():
    """The user cache folder: compiled code and the C kernel."""


def _size(path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0


@cache_group.command("info")
def cache_info():
    """Where the cache is and what it holds."""
    from quantfish.runtime.jit import numba_cache_root
    from quantfish.runtime.paths import cache_dir
    root = cache_dir()
    click.echo(f"cache folder: {root}")
    numba = numba_cache_root()
    folders = sorted(p.name for p in numba.iterdir()) if numba.is_dir() else []
    click.echo(f"compiled code: {len(folders)} folders, {_size(numba) / 1e6:.1f} MB")
    kernels = sorted((root / "kernel").glob("*.so")) if (root / "kernel").is_dir() else []
    click.echo(f"C kernels: {len(kernels)}, {sum(k.stat().st_size for k in kernels) / 1e6:.1f} MB")


@cache_group.command("clear")
def cache_clear():
    """Delete the cache folder (compiled code and kernels are made again when next needed)."""
    from quantfish.runtime.paths import cache_dir
    root = cache_dir()
    if root.is_dir():
        shutil.rmtree(root)
    click.echo(f"cleared {root}")

"""``quantfish bench``: the search benchmark from the command line."""
import click


@click.command("bench")
@click.option("--depth", type=click.IntRange(1, 60), default=None, help="Search depth per position.")
@click.option("--hash", "hash_mb", type=click.IntRange(1, 16384), default=16, help="Hash size in MB.")
@click.option("--net", "net_path", default=None, help="Path of the .nnue file (default: nets/).")
@click.option("--kernel", type=click.Choice(["auto", "c", "numba"]), default=None,
              help="NNUE evaluation path (default: auto, or $QUANTFISH_KERNEL).")
def bench_command(depth, hash_mb, net_path, kernel):
    """Search a fixed set of positions; prints nodes searched and nodes/second."""
    from engine.searcher import Searcher
    from nnue.netfile import load_net
    from nnue.netpath import resolve_net_path
    from uci.bench import run_bench
    try:
        net = load_net(resolve_net_path(net_path))
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    searcher = Searcher(net, hash_mb, kernel)
    click.echo(searcher.kernel.info_string(), err=True)
    run_bench(searcher, depth, click.echo)

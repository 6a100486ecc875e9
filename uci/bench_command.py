"""``quantfish bench``: the search benchmark from the command line."""
import click


@click.command("bench")
@click.option("--depth", type=click.IntRange(1, 60), default=None, help="Search depth per position.")
@click.option("--hash", "hash_mb", type=click.IntRange(1, 16384), default=16, help="Hash size in MB.")
@click.option("--net", "net_path", default=None, help="Path of the .nnue file (default: nets/).")
def bench_command(depth, hash_mb, net_path):
    """Search a fixed set of positions; prints nodes searched and nodes/second."""
    from engine.searcher import Searcher
    from nnue.netfile import load_net
    from nnue.netpath import resolve_net_path
    from uci.bench import run_bench
    try:
        net = load_net(resolve_net_path(net_path))
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    run_bench(Searcher(net, hash_mb), depth, click.echo)

"""``quantfish bench``: the search benchmark from the command line."""
import click

from quantfish.uci.limits import BENCH_MAX_DEPTH


@click.command("bench")
@click.option("--depth", type=click.IntRange(1, BENCH_MAX_DEPTH), default=None, help="Search depth per position.")
@click.option("--hash", "hash_mb", type=click.IntRange(1, 16384), default=16, help="Hash size in MB.")
@click.option("--net", "net_path", default=None, help="Path of the .nnue file (default: nets/).")
@click.option("--net-small", "small_path", default=None,
              help="Stockfish 17.1's small net, paired with a 17.1 big --net (default: $QUANTFISH_NET_SMALL, "
                   "else nn-37f18f62d772.nnue next to the big net, else in nets/).")
@click.option("--kernel", type=click.Choice(["auto", "c", "numba"]), default=None,
              help="NNUE evaluation path (default: auto, or $QUANTFISH_KERNEL).")
@click.option("--threads", type=click.IntRange(1, 256), default=1,
              help="Search threads (Lazy SMP); with more than one the node count varies from run to run.")
def bench_command(depth, hash_mb, net_path, small_path, kernel, threads):
    """Search a fixed set of positions; prints nodes searched and nodes/second.

    A Stockfish 15.1 --net evaluates alone; a 17.1 big --net is paired with its small net."""
    from quantfish.search.driver import Searcher
    from quantfish.nnue.loader import load_nets
    from quantfish.search.bench import run_bench
    try:
        net = load_nets(net_path, small_path)
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    searcher = Searcher(net, hash_mb, kernel)
    searcher.set_threads(threads)
    click.echo(f"NNUE evaluation using {searcher.describe_nets()}", err=True)
    click.echo(searcher.kernel.info_string(), err=True)
    run_bench(searcher, depth, click.echo)

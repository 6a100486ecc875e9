"""The ``quantfish`` command line: UCI by default, and the subcommands (``quantfish --help`` lists them).

Subcommands in their own modules are imported when they are used (or listed by ``--help``), not at start-up,
so that UCI mode and ``quantfish perft`` pay for none of them. A module that fails to import fails its command
loudly (an error, never a missing command): ``LazyGroup`` raises, it does not skip.
"""
import importlib
import sys

import click

from quantfish._version import __version__
from quantfish.uci.limits import PERFT_MAX_DEPTH

# name -> (module, attribute) of the subcommands that live in their own modules
LAZY_COMMANDS = {
    "bench": ("quantfish.cli.bench", "bench_command"),
    "eval": ("quantfish.cli.eval", "eval_command"),
    "gendata": ("quantfish.cli.gendata", "gendata_command"),
    "data": ("quantfish.cli.gendata", "data_group"),
    "train": ("quantfish.cli.train", "train_command"),
    "export": ("quantfish.cli.train", "export_command"),
    "quant-report": ("quantfish.cli.quant", "quant_report_command"),
    "quantize": ("quantfish.cli.quant", "quantize_command"),
    "net": ("quantfish.cli.net", "net_group"),
    "kernel": ("quantfish.cli.setup", "kernel_command"),
    "warm": ("quantfish.cli.setup", "warm_command"),
    "cache": ("quantfish.cli.setup", "cache_group"),
    "match": ("quantfish.cli.match", "match_command"),
}


class CliError(click.ClickException):
    """One clear line on stderr and exit status 1, never a traceback."""


class LazyGroup(click.Group):
    """A click group whose listed subcommands are imported on first use."""

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx, name):
        if name in LAZY_COMMANDS and name not in self.commands:
            module, attr = LAZY_COMMANDS[name]
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, invoke_without_command=True)
@click.version_option(__version__, "--version", "-V", prog_name="quantfish", message="%(prog)s %(version)s")
@click.option("--net", "net_path", default=None, metavar="PATH",
              help="UCI mode: start-up EvalFile (Stockfish 15.1's net, or 17.1's big net).")
@click.option("--net-small", "small_path", default=None, metavar="PATH",
              help="UCI mode: start-up EvalFileSmall (Stockfish 17.1's small net).")
@click.pass_context
def main(ctx, net_path, small_path):
    """Quantfish, a UCI chess engine. With no subcommand it speaks UCI on stdin and stdout."""
    if ctx.invoked_subcommand is None:
        from quantfish.uci.protocol import run_uci
        run_uci(net=net_path, net_small=small_path)


@main.command()
@click.argument("depth", type=click.IntRange(0, PERFT_MAX_DEPTH), required=False)
@click.option("--fen", default=None, help="Position to count from (default: the starting position).")
@click.option("--divide", is_flag=True, help="Also print the count below each legal move.")
@click.option("--chess960", is_flag=True, help="Chess960 castling notation for --divide.")
@click.option("--epd", "epd_file", type=click.Path(dir_okay=False), default=None,
              help="Check every position of a perft suite (FEN ;D1 n ;D2 n ...) up to DEPTH (0: all depths).")
@click.option("--max-nodes", type=int, default=None, help="With --epd: skip counts larger than this.")
def perft(depth, fen, divide, chess960, epd_file, max_nodes):
    """Count the leaf nodes of the legal move tree to DEPTH."""
    from quantfish.cli import perft as perft_runner
    if depth is None and not epd_file:
        raise click.UsageError("give a DEPTH, or --epd FILE to check a suite")
    try:
        if epd_file:
            ok = perft_runner.run_suite(epd_file, depth or 0, max_nodes)
            sys.exit(0 if ok else 1)
        perft_runner.run_one(fen, depth, divide, chess960)
    except (ValueError, OSError) as exc:
        raise CliError(str(exc)) from None


if __name__ == "__main__":
    main()

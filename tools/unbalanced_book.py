"""Picks unbalanced openings from an EPD book: those a UCI engine scores between LO and HI centipawns for one side.

    python -m tools.unbalanced_book BOOK OUT [--engine CMD] [--depth D] [--window LO,HI]
                                              [--sample N] [--seed S]

Self-play from balanced openings at short time controls is mostly draws, which squeezes every Elo difference
towards zero; openings where one side is about a pawn better (as the UHO books used for Stockfish's testing are)
give more decisive game pairs, since the match plays each opening with both colours. The positions are scored
in a random order (``--seed``), ``--sample`` of them at most, and each one kept is written at once, so an
interrupted run keeps what it found. Each position is scored as a new game, so a run repeats exactly with a
deterministic engine (one thread).
"""
from __future__ import annotations

import argparse
import random
import shlex
import sys

import chess
import chess.engine

from quantfish.data.openings import Openings, OpeningsError


def board_of(book: Openings, index: int) -> chess.Board | None:
    """The position of line ``index`` of ``book`` for python-chess, or None when it is not a legal one."""
    try:
        board = chess.Board(book.fen(index))
    except ValueError:
        return None
    return board if board.is_valid() else None


def parse_window(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition(",")
    try:
        window = int(lo), int(hi)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--window wants LO,HI in centipawns, got {text!r}") from None
    if not 0 <= window[0] <= window[1]:
        raise argparse.ArgumentTypeError(f"--window wants 0 <= LO <= HI, got {text!r}")
    return window


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("book", help="EPD or FEN file to pick from")
    ap.add_argument("out", help="where to write the picked lines")
    ap.add_argument("--engine", default=f"{shlex.quote(sys.executable)} -m quantfish.cli.main",
                    help="UCI engine command that scores the positions (default: Quantfish)")
    ap.add_argument("--depth", type=int, default=12)
    ap.add_argument("--hash", type=int, default=16)
    ap.add_argument("--window", type=parse_window, default=(85, 125), metavar="LO,HI",
                    help="keep a position whose score for one side is within LO..HI centipawns")
    ap.add_argument("--sample", type=int, default=None, help="score at most this many positions")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    try:
        book = Openings(args.book)
    except OpeningsError as e:
        ap.error(f"cannot read the book: {e}")
    order = list(range(len(book)))
    random.Random(args.seed).shuffle(order)
    order = order[:args.sample]
    try:
        # its own session, so that Ctrl-C stops this tool, which then quits the engine, and not the engine under it
        engine = chess.engine.SimpleEngine.popen_uci(shlex.split(args.engine), start_new_session=True)
    except (OSError, chess.engine.EngineError) as e:
        ap.error(f"cannot start the engine {args.engine!r}: {e}")
    if "Hash" in engine.options:
        engine.configure({"Hash": args.hash})
    lo, hi = args.window
    scored = kept = 0
    try:
        with open(args.out, "w") as out:
            for index in order:
                board = board_of(book, index)
                if board is None or board.is_game_over():
                    continue
                # a new game for each position (ucinewgame clears the table), so that a score does not depend
                # on the positions scored before it and a run repeats exactly
                info = engine.analyse(board, chess.engine.Limit(depth=args.depth), game=scored)
                score = info["score"].white().score()
                scored += 1
                if score is not None and lo <= abs(score) <= hi:
                    out.write(book.line(index) + "\n")
                    out.flush()
                    kept += 1
                if scored % 100 == 0:
                    print(f"scored {scored} of {len(order)}, kept {kept}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        status = 130
        print(f"interrupted: {args.out} keeps the {kept} found", file=sys.stderr)
    except chess.engine.EngineError as e:
        status = 1
        print(f"the engine failed ({e}): {args.out} keeps the {kept} found", file=sys.stderr)
    except OSError as e:
        status = 1
        print(f"cannot write {args.out}: {e.strerror}", file=sys.stderr)
    else:
        status = 0
    finally:
        try:
            engine.quit()
        except (chess.engine.EngineError, KeyboardInterrupt):
            pass
    print(f"scored {scored}, kept {kept} within {lo}..{hi} cp for one side: {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())

"""A small UCI engine for the match runner's tests: ``python fake_uci_engine.py MODE [--seed N] [--after N]
[--delay S] [--score CP] [--pid-dir DIR]``.

Its moves are a function of the position and the seed alone (mate in one if there is one, else a random
capture, else a random move), so two runs of the same games are the same. It reports the material balance
(or ``--score``) as its score. The mode decides how it misbehaves once it has played ``--after`` moves since
it started:

* ``random``: behaves.
* ``crash``: exits on ``go``.
* ``illegal``: answers with a move of one of the opponent's pieces.
* ``hang``: stops answering ``go`` (and ``isready``).
* ``slow``: sleeps ``--delay`` seconds before each ``bestmove``.
* ``garbage``: surrounds every answer with junk lines, invalid UTF-8 and malformed ``info`` fields.
* ``nostart``: exits at once; ``silent``: never answers ``uci``.

``--pid-dir`` leaves an empty file named by the process id there, so a test can check the process has ended.
"""
import argparse
import os
import random
import sys
import time

import chess

VALUES = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 300, chess.ROOK: 500, chess.QUEEN: 900}


def choose(board: chess.Board, seed: int) -> chess.Move:
    moves = sorted(board.legal_moves, key=chess.Move.uci)
    rng = random.Random(f"{seed}:{board.fen()}")
    for move in moves:
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return move
    captures = [move for move in moves if board.is_capture(move)]
    return rng.choice(captures or moves)


def material(board: chess.Board) -> int:
    total = 0
    for piece_type, value in VALUES.items():
        total += value * (len(board.pieces(piece_type, board.turn)) - len(board.pieces(piece_type, not board.turn)))
    return total


def illegal_move(board: chess.Board) -> str:
    for square in chess.SQUARES:
        piece = board.piece_at(square)
        if piece is not None and piece.color != board.turn:
            target = square + 8 if square + 8 < 64 else square - 8
            return chess.Move(square, target).uci()
    return "a1a1"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--after", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--score", type=int, default=None)
    parser.add_argument("--pid-dir", default=None)
    args = parser.parse_args()
    if args.pid_dir:
        open(os.path.join(args.pid_dir, str(os.getpid())), "w").close()
    out = sys.stdout

    def say(text: str) -> None:
        if args.mode == "garbage":
            out.buffer.write(b"\xff\xfe garbage \x00 line\n")
            out.write("info depth x score cp\ninfo score mate\nbestmovex\n\n   \n")
        out.write(text + "\n")
        out.flush()

    if args.mode == "nostart":
        sys.exit(1)
    board = chess.Board()
    played = 0
    hung = False
    for line in sys.stdin:
        tokens = line.split()
        if not tokens:
            continue
        command = tokens[0]
        if command == "uci":
            if args.mode == "silent":
                continue
            say("id name fake " + args.mode)
            say("option name Hash type spin default 16 min 1 max 1024")
            say("uciok")
        elif command == "isready":
            if not hung:
                say("readyok")
        elif command == "position":
            if "fen" in tokens:
                start = tokens.index("fen") + 1
                end = tokens.index("moves") if "moves" in tokens else len(tokens)
                board = chess.Board(" ".join(tokens[start:end]))
            else:
                board = chess.Board()
            if "moves" in tokens:
                for uci in tokens[tokens.index("moves") + 1:]:
                    board.push_uci(uci)
        elif command == "go":
            misbehave = played >= args.after
            if args.mode == "crash" and misbehave:
                sys.exit(3)
            if args.mode == "hang" and misbehave:
                hung = True
            if hung:
                continue
            if args.mode == "slow" and misbehave:
                time.sleep(args.delay)
            score = args.score if args.score is not None else material(board)
            say(f"info depth 1 score cp {score} nodes 1 pv")
            move = illegal_move(board) if args.mode == "illegal" and misbehave else choose(board, args.seed).uci()
            played += 1
            say(f"bestmove {move}")
        elif command == "quit":
            break


if __name__ == "__main__":
    main()

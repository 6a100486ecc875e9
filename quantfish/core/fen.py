"""FEN and EPD text to and from position arrays, refusing anything that is not a legal position."""
import numpy as np

from quantfish.core.attacks import attackers_by
from quantfish.core.position import (ST_CASTLE, ST_CHESS960, ST_EP, ST_FULLMOVE, ST_KEY, ST_KSQ, ST_ROOKSQ, ST_RULE50,
                             ST_SIDE, ST_SIZE, compute_key)
from quantfish.core.tables import tables
from quantfish.core.placement import format_placement, parse_placement

STARTING_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
FILES = "abcdefgh"


class FenError(ValueError):
    """A FEN that does not describe a legal chess position."""


class Board:
    """A position held in the engine's arrays, with the Python conveniences around it."""

    __slots__ = ("bb", "board", "st")

    def __init__(self, bb, board, st):
        self.bb = bb
        self.board = board
        self.st = st

    @property
    def side(self):
        return int(self.st[ST_SIDE])

    @property
    def halfmove(self):
        return int(self.st[ST_RULE50])

    @property
    def fullmove(self):
        return int(self.st[ST_FULLMOVE])

    @property
    def game_ply(self):
        """Half-moves since the game began, as the move number and the side to move say."""
        return 2 * (self.fullmove - 1) + self.side

    @property
    def chess960(self):
        return bool(self.st[ST_CHESS960])

    def copy(self):
        return Board(self.bb.copy(), self.board.copy(), self.st.copy())

    def fen(self):
        return format_fen(self)

    def __repr__(self):
        return f"Board({self.fen()!r})"


def square_name(sq):
    return FILES[sq & 7] + str((sq >> 3) + 1)


def parse_square(text):
    if len(text) != 2 or text[0] not in FILES or text[1] not in "12345678":
        raise FenError(f"bad square {text!r}")
    return FILES.index(text[0]) + 8 * (int(text[1]) - 1)


def _parse_placement(field):
    try:
        return parse_placement(field)
    except ValueError as exc:
        raise FenError(str(exc)) from None


def _parse_castling(field, board, ksq, chess960):
    """Rights mask and rook squares from KQkq, Shredder-FEN (HAha) or X-FEN castling fields."""
    rights = 0
    rooks = [64, 64, 64, 64]
    if field == "-":
        return rights, rooks
    seen = set()
    for ch in field:
        if ch in seen:
            raise FenError(f"castling right {ch!r} given twice")
        seen.add(ch)
        colour = 0 if ch.isupper() else 1
        back = 0 if colour == 0 else 56
        king = ksq[colour]
        rook_code = colour * 8 + 4
        if king & 56 != back:
            raise FenError(f"castling right {ch!r} but the {'white' if colour == 0 else 'black'} king "
                           f"is not on its back rank")
        c = ch.lower()
        if c == "k":
            files = [f for f in range(7, (king & 7), -1) if board[back + f] == rook_code]
            side = 0
        elif c == "q":
            files = [f for f in range(0, (king & 7)) if board[back + f] == rook_code]
            side = 1
        elif c in FILES:
            f = FILES.index(c)
            files = [f] if board[back + f] == rook_code else []
            side = 0 if f > (king & 7) else 1
            if f == (king & 7):
                files = []
        else:
            raise FenError(f"bad castling character {ch!r}")
        if not files:
            raise FenError(f"castling right {ch!r} but there is no rook to castle with")
        rsq = back + files[0]
        r = 2 * colour + side
        if rights >> r & 1:
            raise FenError(f"castling right {ch!r} duplicates another")
        rights |= 1 << r
        rooks[r] = rsq
    return rights, rooks


FEN_COUNTER_MAX = 2**31 - 1     # as Stockfish's int; the position's int64 fields hold any of them


def parse_fen(fen, chess960=False):
    """Board from a FEN (6 fields, or the first 4 of EPD with clocks defaulting to 0 and 1)."""
    if not isinstance(fen, str):
        raise FenError("FEN must be text")
    fields = fen.split()
    if len(fields) not in (4, 6):
        raise FenError(f"FEN has {len(fields)} fields, expected 6 (or 4 without the move counters)")
    board = _parse_placement(fields[0])
    if fields[1] not in ("w", "b"):
        raise FenError(f"side to move is {fields[1]!r}, expected 'w' or 'b'")
    side = 0 if fields[1] == "w" else 1

    ksq = [64, 64]
    for colour in (0, 1):
        name = "white" if colour == 0 else "black"
        kings = np.flatnonzero(board == colour * 8 + 6)
        if len(kings) != 1:
            raise FenError(f"{len(kings)} {name} kings, expected 1")
        ksq[colour] = int(kings[0])
        pieces = np.count_nonzero((board != 0) & ((board >> 3) == colour))
        if pieces > 16:
            raise FenError(f"{pieces} {name} pieces, at most 16 are possible")
        pawns = np.flatnonzero(board == colour * 8 + 1)
        if len(pawns) > 8:
            raise FenError(f"{len(pawns)} {name} pawns, at most 8 are possible")
    if np.any((board[:8] & 7) == 1) or np.any((board[56:] & 7) == 1):
        raise FenError("a pawn stands on the first or eighth rank")

    rights, rooks = _parse_castling(fields[2], board, ksq, chess960)
    is960 = chess960
    for r in range(4):
        if rights >> r & 1:
            colour = r >> 1
            standard_king = 4 if colour == 0 else 60
            standard_rook = (7 if r & 1 == 0 else 0) + (0 if colour == 0 else 56)
            if ksq[colour] != standard_king or rooks[r] != standard_rook:
                is960 = True

    if fields[3] == "-":
        ep = 64
    else:
        try:
            ep = parse_square(fields[3])
        except FenError:
            raise FenError(f"bad en passant square {fields[3]!r}") from None
        expected_rank = 5 if side == 0 else 2
        if ep >> 3 != expected_rank:
            raise FenError(f"en passant square {fields[3]} is not on rank {expected_rank + 1}")
        pawn_sq = ep - 8 if side == 0 else ep + 8
        origin = ep + 8 if side == 0 else ep - 8
        if board[pawn_sq] != (1 - side) * 8 + 1 or board[ep] != 0 or board[origin] != 0:
            raise FenError(f"en passant square {fields[3]} without a pawn that has just advanced two squares")

    if len(fields) == 6:
        try:
            rule50 = int(fields[4])
            fullmove = int(fields[5])
        except ValueError:
            raise FenError("halfmove clock and fullmove number must be integers") from None
        if rule50 < 0 or fullmove < 0:
            raise FenError("halfmove clock and fullmove number must not be negative")
        if max(rule50, fullmove) > FEN_COUNTER_MAX:
            raise FenError(f"halfmove clock and fullmove number must be at most {FEN_COUNTER_MAX}")
        fullmove = max(fullmove, 1)
    else:
        rule50, fullmove = 0, 1

    bb = np.zeros(16, dtype=np.uint64)
    for sq in range(64):
        pc = int(board[sq])
        if pc:
            bb[pc] |= np.uint64(1 << sq)
            bb[pc & 8] |= np.uint64(1 << sq)
    st = np.zeros(ST_SIZE, dtype=np.int64)
    st[ST_SIDE] = side
    st[ST_CASTLE] = rights
    st[ST_RULE50] = rule50
    st[ST_FULLMOVE] = fullmove
    st[ST_KSQ] = ksq[0]
    st[ST_KSQ + 1] = ksq[1]
    st[ST_ROOKSQ:ST_ROOKSQ + 4] = rooks
    st[ST_CHESS960] = 1 if is960 else 0
    T = tables()
    occ = bb[0] | bb[8]
    if attackers_by(T, bb, ksq[1 - side], occ, side):
        raise FenError("the side not to move is in check")
    checkers = attackers_by(T, bb, ksq[side], occ, 1 - side)
    if bin(int(checkers)).count("1") > 2:
        raise FenError("the side to move is in check from more than two pieces")
    # Keep the en passant square only when a pawn can capture there, as Stockfish does.
    if ep != 64:
        from quantfish.core.attacks import pawn_attacks
        if not (pawn_attacks(T, 1 - side, ep) & bb[side * 8 + 1]):
            ep = 64
    st[ST_EP] = ep
    st[ST_KEY] = np.uint64(compute_key(T, board, st)).view(np.int64)
    return Board(bb, board, st)


def format_fen(b, shredder=False):
    board, st = b.board, b.st
    rights = int(st[ST_CASTLE])
    castling = ""
    for r, letter in enumerate("KQkq"):
        if rights >> r & 1:
            rsq = int(st[ST_ROOKSQ + r])
            colour = r >> 1
            if st[ST_CHESS960] or shredder:
                # X-FEN: KQkq when the rook is the outermost on its side, else the file letter.
                back = 0 if colour == 0 else 56
                king_file = int(st[ST_KSQ + colour]) & 7
                rook_code = colour * 8 + 4
                if r & 1 == 0:
                    outer = [f for f in range(7, king_file, -1) if board[back + f] == rook_code]
                else:
                    outer = [f for f in range(0, king_file) if board[back + f] == rook_code]
                if shredder or not outer or outer[0] != (rsq & 7):
                    ch = FILES[rsq & 7]
                    letter = ch.upper() if colour == 0 else ch
            castling += letter
    ep = int(st[ST_EP])
    return " ".join([format_placement(board), "wb"[int(st[ST_SIDE])], castling or "-",
                     square_name(ep) if ep != 64 else "-", str(int(st[ST_RULE50])), str(int(st[ST_FULLMOVE]))])

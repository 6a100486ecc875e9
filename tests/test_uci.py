"""The engine driven as a subprocess over UCI, as a GUI or match runner would."""
import os
import queue
import subprocess
import sys
import threading
import time

import chess
import chess.engine
import chess.syzygy
import pytest

ENGINE = [sys.executable, "-m", "quantfish.cli.main"]
ROOT = os.path.join(os.path.dirname(__file__), "..")


class Uci:
    """A running engine with a line reader that never blocks the test forever."""

    def __init__(self, env=None):
        self.p = subprocess.Popen(ENGINE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, bufsize=1, cwd=ROOT, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.seen = []

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def expect(self, prefix, timeout=60):
        """Lines up to and including the first that starts with ``prefix``."""
        got = []
        deadline = time.time() + timeout
        while True:
            line = self.lines.get(timeout=max(0.01, deadline - time.time()))
            assert line is not None, f"engine exited; saw {got}"
            got.append(line)
            self.seen.append(line)
            if line.startswith(prefix):
                return got

    def close(self):
        try:
            self.send("quit")
            self.p.wait(timeout=10)
        except Exception:
            self.p.kill()
        out = self.p.stderr.read()
        return out


@pytest.fixture
def uci():
    engine = Uci()
    engine.send("uci")
    engine.expect("uciok", timeout=10)
    engine.send("isready")
    engine.expect("readyok", timeout=300)
    yield engine
    engine.close()
    assert all("Traceback" not in line for line in engine.seen)


def test_uci_handshake_lists_options():
    engine = Uci()
    start = time.time()
    engine.send("uci")
    lines = engine.expect("uciok", timeout=10)
    assert time.time() - start < 5
    from quantfish import __version__
    assert lines[0] == f"id name Quantfish {__version__}"
    text = "\n".join(lines)
    for name in ("Hash", "Clear Hash", "Threads", "EvalFile", "Move Overhead", "Ponder", "MultiPV", "UCI_Chess960"):
        assert f"option name {name} type" in text
    engine.close()


def _bestmove(lines):
    return lines[-1].split()[1]


def test_go_depth_gives_info_and_legal_bestmove(uci):
    uci.send("position startpos moves e2e4 e7e5 g1f3")
    uci.send("go depth 6")
    lines = uci.expect("bestmove")
    infos = [l for l in lines if l.startswith("info depth")]
    assert infos and all(k in infos[-1].split() for k in ("seldepth", "score", "nodes", "nps", "time", "pv",
                                                           "hashfull", "multipv"))
    assert "depth 6" in infos[-1]
    board = chess.Board()
    for m in ("e2e4", "e7e5", "g1f3"):
        board.push_uci(m)
    assert chess.Move.from_uci(_bestmove(lines)) in board.legal_moves


def test_stop_ends_infinite_search_quickly(uci):
    uci.send("position startpos")
    uci.send("go infinite")
    time.sleep(1.0)
    start = time.time()
    uci.send("stop")
    lines = uci.expect("bestmove", timeout=5)
    assert time.time() - start < 0.5
    assert chess.Move.from_uci(_bestmove(lines)) in chess.Board().legal_moves


def test_infinite_search_waits_for_stop_even_when_done(uci):
    uci.send("position fen k7/8/1K6/8/8/8/8/7R w - - 0 1")  # mate in 1 found at once
    uci.send("go infinite depth 3")
    time.sleep(0.5)
    assert uci.lines.empty() or all(not l.startswith("bestmove") for l in list(uci.lines.queue))
    uci.send("stop")
    assert _bestmove(uci.expect("bestmove", timeout=5)) == "h1h8"


def test_ponderhit_turns_ponder_into_normal_search(uci):
    uci.send("position startpos moves e2e4 e7e5")
    uci.send("go ponder wtime 2000 btime 2000")
    time.sleep(0.3)
    uci.send("ponderhit")
    lines = uci.expect("bestmove", timeout=5)
    assert chess.Move.from_uci(_bestmove(lines)) in chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2").legal_moves


def test_movetime_is_respected(uci):
    uci.send("position startpos")
    start = time.time()
    uci.send("go movetime 300")
    uci.expect("bestmove", timeout=5)
    assert time.time() - start < 1.0


@pytest.mark.parametrize("moves", [
    "e2e4 d7d5 e4e5 f7f5 e5f6",
    "g1f3 g8f6 g2g3 g7g6 f1g2 f8g7 e1g1 e8g8",
    "b1c3 d7d5 d2d4 c8f5 c1f4 b8c6 d1d2 d8d7 e1c1 e8c8",
    "h2h4 g7g5 h4g5 h7h5 g5g6 h5h4 g6g7 h4h3 g7h8q h3g2 h8g8 g2f1n",
])
def test_position_moves_with_special_moves(uci, moves):
    board = chess.Board()
    for m in moves.split():
        board.push_uci(m)
    fen_after = board.fen(en_passant="xfen")
    uci.send(f"position startpos moves {moves}")
    uci.send("d")
    lines = uci.expect("Key:")
    assert f"Fen: {fen_after}" in lines


BAD_INPUT = [
    ("position fen 8/8/8 w - - 0 1", "bad FEN"),
    ("position startpos moves e2e5", "illegal move e2e5"),
    ("position", "position needs"),
    ("position sideways", "position needs"),
    ("setoption name Hash value lots", "needs an integer"),
    ("setoption name Hash value 999999", "between"),
    ("setoption name NoSuchOption value 3", "unknown option"),
    ("setoption", "setoption needs"),
    ("setoption name EvalFile value /no/such/file.nnue", "keeping the previous net"),
    ("go depth -3", "must be positive"),
    ("go wtime", "needs a number"),
    ("go sideways", "unknown go parameter"),
    ("flibbertigibbet", "unknown command"),
    ("go searchmoves e2e5", "illegal move"),
]


@pytest.mark.parametrize("command,words", BAD_INPUT)
def test_bad_input_gets_info_string_and_state_is_kept(uci, command, words):
    uci.send("position startpos moves e2e4")
    uci.send(command)
    uci.send("d")
    lines = uci.expect("Key:")
    strings = [l for l in lines if l.startswith("info string")]
    assert len(strings) == 1 and words in strings[0], lines
    assert "Fen: rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1" in lines
    uci.send("isready")
    uci.expect("readyok", timeout=10)


def test_corrupt_evalfile_is_refused(uci, tmp_path):
    bad = tmp_path / "bad.nnue"
    bad.write_bytes(b"\x00" * 1000)
    uci.send(f"setoption name EvalFile value {bad}")
    uci.send("position startpos")
    uci.send("go depth 2")
    lines = uci.expect("bestmove")
    assert any(l.startswith("info string") and "previous net" in l for l in lines)


def test_go_without_a_net_answers_at_once(tmp_path):
    """With no net loaded a GUI still gets an answer to go (the reason, then bestmove 0000), and setting EvalFile
    to a net that loads makes the engine ready."""
    engine = Uci(env=dict(os.environ, QUANTFISH_NET=str(tmp_path / "absent.nnue")))
    engine.send("uci")
    engine.expect("uciok", timeout=10)
    engine.send("isready")
    lines = engine.expect("readyok", timeout=300)
    assert any(l.startswith("info string") and "not found" in l for l in lines), lines
    engine.send("position startpos")
    engine.send("go wtime 1000 btime 1000")
    lines = engine.expect("bestmove", timeout=10)
    assert lines[-1] == "bestmove 0000"
    assert any(l.startswith("info string") and "absent.nnue" in l for l in lines), lines
    engine.send("go perft 1")
    engine.send("isready")
    lines = engine.expect("readyok", timeout=10)
    assert not any(l.startswith("bestmove") or l.startswith("Nodes searched") for l in lines), lines
    # Naming a net that loads is the way out.
    from quantfish.nnue.locate import OWN_NET_NAME, package_nets_dir
    engine.send(f"setoption name EvalFile value {tmp_path / 'also-absent.nnue'}")
    engine.send(f"setoption name EvalFile value {package_nets_dir() / OWN_NET_NAME}")
    engine.send("isready")
    lines = engine.expect("readyok", timeout=300)
    assert any("also-absent.nnue" in l and "not loaded" in l for l in lines), lines
    assert not any("not ready" in l for l in lines), lines
    engine.send("position startpos moves e2e4")
    engine.send("go depth 3")
    move = _bestmove(engine.expect("bestmove", timeout=60))
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(move) in board.legal_moves
    err = engine.close()
    assert all("Traceback" not in line for line in engine.seen)
    assert "absent.nnue" in err and "Traceback" not in err, err      # a user's error is one line on stderr


def test_multipv_gives_distinct_lines(uci):
    uci.send("setoption name MultiPV value 3")
    uci.send("position startpos")
    uci.send("go depth 5")
    lines = uci.expect("bestmove")
    last = [l for l in lines if l.startswith("info depth 5 ")]
    assert [l.split()[l.split().index("multipv") + 1] for l in last] == ["1", "2", "3"]
    firsts = {l.split()[l.split().index("pv") + 1] for l in last}
    assert len(firsts) == 3


def test_chess960_castling_is_king_takes_rook(uci):
    uci.send("setoption name UCI_Chess960 value true")
    uci.send("position fen bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9")
    uci.send("go perft 1")
    lines = uci.expect("Nodes searched")
    assert lines[-1] == "Nodes searched: 21"
    uci.send("position fen rk2r3/8/8/8/8/8/8/RK2R3 w EAea - 0 1 moves b1a1")
    uci.send("d")
    lines = uci.expect("Key:")
    assert "Fen: rk2r3/8/8/8/8/8/8/2KRR3 b kq - 1 1" in lines
    # Castling into the file of an enemy rook is refused even though the rook shields the king now.
    uci.send("position fen 1r2k1r1/8/8/8/8/8/8/1R2K1R1 w GBgb - 0 1 moves e1g1")
    lines = uci.expect("info string")
    assert "illegal move e1g1" in lines[-1]


def test_go_perft_and_eval_commands(uci):
    uci.send("position startpos")
    uci.send("go perft 3")
    lines = uci.expect("Nodes searched")
    assert lines[-1] == "Nodes searched: 8902"
    uci.send("eval")
    lines = uci.expect("Final evaluation")
    assert any("this bucket is used" in l for l in lines)


def test_game_against_itself_via_python_chess():
    """A whole game through python-chess's engine module: every move legal, no crash."""
    with chess.engine.SimpleEngine.popen_uci(ENGINE, cwd=ROOT, timeout=300) as engine:
        engine.configure({"Hash": 8})
        board = chess.Board()
        while not board.is_game_over(claim_draw=True) and board.ply() < 120:
            result = engine.play(board, chess.engine.Limit(white_clock=5, black_clock=5, white_inc=0.05,
                                                           black_inc=0.05))
            assert result.move in board.legal_moves
            board.push(result.move)
        info = engine.analyse(board, chess.engine.Limit(depth=4)) if not board.is_game_over() else None
        if info is not None:
            assert "score" in info


def test_go_nodes_limits_the_search(uci):
    uci.send("position startpos")
    uci.send("go nodes 3000")
    lines = uci.expect("bestmove")
    infos = [l.split() for l in lines if l.startswith("info depth")]
    assert infos
    assert int(infos[-1][infos[-1].index("nodes") + 1]) <= 3000 + 1024


def test_go_mate_finds_the_mate_and_stops(uci):
    uci.send("position fen 6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
    uci.send("go mate 1")
    lines = uci.expect("bestmove", timeout=30)
    assert _bestmove(lines) == "d1d8"
    assert "score mate 1" in [l for l in lines if l.startswith("info depth")][-1]


def test_searchmoves_restricts_the_root(uci):
    uci.send("position startpos")
    uci.send("go depth 6 searchmoves a2a3 h2h3")
    assert _bestmove(uci.expect("bestmove")) in ("a2a3", "h2h3")


def test_time_control_search_leaves_time_on_the_clock(uci):
    uci.send("position startpos moves e2e4 c7c5")
    start = time.time()
    uci.send("go wtime 500 btime 500 winc 0 binc 0")
    uci.expect("bestmove", timeout=5)
    assert time.time() - start < 0.5


def test_ucinewgame_and_clear_hash_then_search(uci):
    uci.send("ucinewgame")
    uci.send("setoption name Clear Hash")
    uci.send("setoption name Hash value 32")
    uci.send("position startpos")
    uci.send("go depth 4")
    lines = uci.expect("bestmove")
    assert not any(l.startswith("info string") and "error" in l for l in lines)


def test_hash_set_while_the_nets_load_takes_effect():
    """GUIs set their options between uciok and readyok, while the nets still load in the background: the table
    must get the size set then, not keep the default."""
    engine = Uci()
    engine.send("uci")
    engine.expect("uciok", timeout=10)
    engine.send("setoption name Hash value 1")
    engine.send("isready")
    engine.expect("readyok", timeout=300)
    engine.send("position startpos")
    engine.send("go nodes 300000")
    lines = engine.expect("bestmove")
    engine.close()
    hashfull = int([l for l in lines if " hashfull " in l][-1].split(" hashfull ")[1].split()[0])
    # Near 300,000 nodes fill most of a 1 MB table (65,536 entries) but about a seventh of the default 16 MB.
    assert hashfull > 500, lines[-2:]


@pytest.mark.parametrize("path", ["numba", "c"])
def test_nnue_path_option_chooses_the_evaluation_code(uci, path):
    uci.send("position startpos")
    uci.send("go depth 6")
    first = [l for l in uci.expect("bestmove") if l.startswith("info depth 6")][-1]
    uci.send(f"setoption name NNUE Path value {path}")
    note = uci.expect("info string")[-1]
    assert f"NNUE path {path}" in note or (path == "c" and "NNUE path c-" in note)
    uci.send("ucinewgame")
    uci.send("go depth 6")
    again = [l for l in uci.expect("bestmove") if l.startswith("info depth 6")][-1]
    # Both paths compute the same integers, so the search is the same node for node.
    assert first.split(" nps ")[0] == again.split(" nps ")[0]


def test_threads_option_searches_with_helpers(uci):
    uci.send("setoption name Threads value 300")
    assert "between 1 and 256" in uci.expect("info string")[-1]
    uci.send("setoption name Threads value 3")
    uci.send("position startpos moves e2e4")
    uci.send("go depth 7")
    lines = uci.expect("bestmove")
    assert chess.Move.from_uci(_bestmove(lines)) in chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b "
                                                                "KQkq - 0 1").legal_moves
    uci.send("go infinite")
    time.sleep(0.5)
    start = time.time()
    uci.send("stop")
    uci.expect("bestmove", timeout=5)
    assert time.time() - start < 2.0
    uci.send("setoption name Hash value 4")
    uci.send("setoption name Clear Hash")
    uci.send("go nodes 20000")
    lines = uci.expect("bestmove")
    nodes = int([l for l in lines if l.startswith("info depth")][-1].split(" nodes ")[1].split()[0])
    assert nodes <= 20000 + 3 * 1024


def test_show_wdl_adds_win_draw_loss_to_info(uci):
    uci.send("setoption name UCI_ShowWDL value true")
    uci.send("position startpos moves e2e4 e7e5")
    uci.send("go depth 5")
    infos = [l.split() for l in uci.expect("bestmove") if l.startswith("info depth")]
    assert infos
    for words in infos:
        i = words.index("wdl")
        assert words[i - 3] == "score" and sum(int(w) for w in words[i + 1:i + 4]) == 1000
    # The model's values for the reported score at the game's ply (Black to move at move 20: ply 39). Depth 4
    # reports a score in centipawns; from depth 6 the search can see the mate in 3.
    from quantfish.search.wdl import wdl
    uci.send("position fen 8/8/8/4k3/8/8/3q4/6K1 b - - 0 20")
    uci.send("go depth 4")
    words = [l.split() for l in uci.expect("bestmove") if l.startswith("info depth")][-1]
    assert words[words.index("score") + 1] == "cp"
    cp = int(words[words.index("score") + 2])
    assert cp > 300
    assert tuple(int(w) for w in words[words.index("wdl") + 1:words.index("wdl") + 4]) == wdl(cp, 39) != wdl(cp, 0)


def test_syzygy_path_ranks_root_moves(uci):
    uci.send("setoption name SyzygyPath value /no/such/dir")
    text = uci.expect("info string")[-1]
    assert "/no/such/dir" in text and "does not exist" in text
    from tests.test_tablebase import KRK, TABLES
    uci.send(f"setoption name SyzygyPath value {TABLES}")
    assert "WDL" in uci.expect("info string")[-1]
    uci.send(f"position fen {KRK}")
    uci.send("go depth 3")
    lines = uci.expect("bestmove")
    info = [l.split() for l in lines if l.startswith("info depth")][-1]
    assert int(info[info.index("tbhits") + 1]) > 0
    assert info[info.index("score") + 1] == "mate" or int(info[info.index("score") + 2]) > 5000
    board = chess.Board(KRK)
    with chess.syzygy.open_tablebase(str(TABLES)) as tb:
        board.push_uci(_bestmove(lines))
        assert tb.probe_wdl(board) == -2
    uci.send("setoption name SyzygyPath value")
    assert "no Syzygy tables" in uci.expect("info string")[-1]


def test_syzygy_tables_are_probed_in_the_search(uci):
    from tests.test_tablebase import TABLES
    from tests.test_tablebase_search import CAPTURE_INTO_TABLES
    uci.send(f"setoption name SyzygyPath value {TABLES}")
    uci.expect("info string")

    def search():
        uci.send(f"position fen {CAPTURE_INTO_TABLES}")     # five men: only a capture reaches the tables
        uci.send("go depth 5")
        lines = uci.expect("bestmove")
        info = [l.split() for l in lines if l.startswith("info depth")][-1]
        return _bestmove(lines), int(info[info.index("tbhits") + 1]), info[info.index("score") + 1:][:2]

    move, hits, score = search()
    assert move == "d3d1" and hits > 0 and score[0] == "cp" and int(score[1]) > 5000
    uci.send("setoption name SyzygyProbeLimit value 0")
    move, hits, score = search()
    assert hits == 0 and int(score[1]) < 5000
    uci.send("setoption name SyzygyProbeLimit value 7")
    uci.send("setoption name SyzygyPath value")
    uci.expect("info string")


@pytest.mark.parametrize("options,depth", [(("Skill Level", 0), 1), (("Skill Level", 3), 4), (("UCI_Elo", 1500), 6)])
def test_weakened_search_plays_legal_moves_from_a_multipv_search(uci, options, depth):
    from quantfish.search.skill import MULTIPV
    name, value = options
    if name == "UCI_Elo":
        uci.send("setoption name UCI_LimitStrength value true")
    uci.send(f"setoption name {name} value {value}")
    board = chess.Board()
    for _ in range(6):
        uci.send("position startpos moves " + " ".join(m.uci() for m in board.move_stack))
        start = time.time()
        # A weakened search stops at its depth, even when the GUI allows more; and it keeps to the clock.
        uci.send("go depth 30" if name == "UCI_Elo" else "go wtime 3000 btime 3000 winc 100 binc 100")
        lines = uci.expect("bestmove")
        assert time.time() - start < 3.0 or name == "UCI_Elo"
        assert not [l for l in lines if "error" in l]       # no search error
        infos = [l.split() for l in lines if l.startswith("info depth")]
        reached = max(int(w[w.index("depth") + 1]) for w in infos)
        assert reached == depth                             # 1 + level plies (UCI_Elo: 4 more)
        assert max(int(w[w.index("multipv") + 1]) for w in infos) == MULTIPV
        move = chess.Move.from_uci(_bestmove(lines))
        assert move in board.legal_moves
        board.push(move)

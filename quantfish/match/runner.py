"""Game pairs, batches of pairs, and the local match that plays them concurrently.

Pair ``p`` is the opening ``opening_index(config, p)`` played twice, the first engine White in game 0 and
Black in game 1. ``play_pairs(config, pairs)`` plays a list of pair indices with its own engine processes and
returns one ``PairResult`` each; ``Tally`` aggregates any collection of them, in any order, to the same
statistics. ``run_match`` runs several such players in threads, stops early on an SPRT decision, a failed
start or Ctrl-C, and kills every engine it started before it returns.
"""
from __future__ import annotations

import collections
import functools
import queue
import random
import threading
import time
from dataclasses import dataclass, field

import chess

from quantfish.data.openings import Openings
from quantfish.match.config import MatchConfig
from quantfish.match.game import ABORTED, FAULT_KINDS, PLAYED, UNPLAYED, GameRecord, play_game
from quantfish.match.stats import EloEstimate, Sprt, estimate_elo, pentanomial_index
from quantfish.match.uci import EngineStartError, UciEngine

RESTART_AFTER = ("crash", "hang", "time")


class BookError(ValueError):
    """An opening that python-chess refuses."""


@functools.lru_cache(maxsize=4)
def load_book(path: str) -> Openings:
    """The openings of ``path``, read once per process."""
    return Openings(path)


@functools.lru_cache(maxsize=8)
def _shuffled(size: int, seed: int) -> tuple[int, ...]:
    order = list(range(size))
    random.Random(seed).shuffle(order)
    return tuple(order)


def opening_index(config: MatchConfig, pair: int, book_size: int | None = None) -> int:
    """The book line of pair ``pair``: the file's order, or a shuffle seeded by ``config.seed``; the book is
    used again from the start once every line has been played."""
    size = book_size if book_size is not None else len(load_book(config.book))
    if config.book_order == "sequential":
        return pair % size
    return _shuffled(size, config.seed)[pair % size]


def pair_opening(config: MatchConfig, pair: int) -> tuple[int, str]:
    """(book index, FEN as python-chess writes it) of pair ``pair``; ``BookError`` for a bad line."""
    book = load_book(config.book)
    index = opening_index(config, pair, len(book))
    try:
        board = chess.Board(book.fen(index))
    except ValueError as exc:
        raise BookError(f"{book.path}: position {index + 1} ({book.line(index)!r}): {exc}") from None
    if not board.is_valid():
        raise BookError(f"{book.path}: position {index + 1} ({book.line(index)!r}) is not a legal position")
    return index, board.fen()


@dataclass
class PairResult:
    """The two games of one pair (fewer than two played when the match stopped or an engine did not start)."""
    pair: int
    opening: int
    fen: str
    games: list[GameRecord]

    @property
    def complete(self) -> bool:
        return len(self.games) == 2 and all(game.played for game in self.games)

    def points(self, name: str) -> float | None:
        """Points of ``name`` over the pair, None unless complete."""
        if not self.complete:
            return None
        return sum(game.points(name) for game in self.games)


class Player:
    """Plays pairs one game at a time with one process per engine, started when first needed and started
    again after a crash, a hang or a loss on time. After an engine fails to start (twice in a row) the player
    plays nothing more: every later game is returned unplayed."""

    def __init__(self, config: MatchConfig, stop: threading.Event | None = None, on_game=None):
        self.config = config
        self.stop = stop if stop is not None else threading.Event()
        self.on_game = on_game
        self.engines = {spec.name: UciEngine(spec.name, spec.command, spec.options) for spec in config.engines}
        self.start_failure: str | None = None

    def _start(self, engine: UciEngine) -> str | None:
        """None once ``engine`` runs, else why it does not."""
        if engine.alive:
            return None
        reason = None
        for _ in range(2):
            try:
                engine.start(self.config.startup_timeout)
                return None
            except EngineStartError as exc:
                reason = str(exc)
            if self.stop.is_set():
                break
        return reason

    def play_pair(self, pair: int) -> PairResult:
        opening, fen = pair_opening(self.config, pair)
        first, second = self.config.names
        games = []
        for number, (white, black) in enumerate(((first, second), (second, first))):
            record = GameRecord(pair=pair, game=number, opening=opening, fen=fen, white=white, black=black)
            games.append(record)
            if self.stop.is_set():
                record.status, record.reason = ABORTED, "aborted"
                continue
            if self.start_failure is not None:
                record.status, record.reason = UNPLAYED, f"not played: {self.start_failure}"
                continue
            for name in (white, black):
                reason = self._start(self.engines[name])
                if reason is not None:
                    if self.stop.is_set():
                        record.status, record.reason = ABORTED, "aborted"
                    else:
                        record.status, record.reason = UNPLAYED, f"engine {name} failed to start: {reason}"
                        record.fault, record.fault_engine = "start", name
                        self.start_failure = record.reason
                    break
            else:
                play_game(self.config, self.engines[white], self.engines[black], record, self.stop)
                if record.fault in RESTART_AFTER:
                    self.engines[record.fault_engine].kill()
            if self.on_game is not None:
                self.on_game(record)
        return PairResult(pair=pair, opening=opening, fen=fen, games=games)

    def abort(self) -> None:
        """Kills the engines now, from any thread; the game in progress ends as aborted."""
        self.stop.set()
        for engine in self.engines.values():
            engine.close()

    def close(self) -> None:
        for engine in self.engines.values():
            engine.quit()


def play_pairs(config: MatchConfig, pairs, *, on_game=None, stop: threading.Event | None = None
               ) -> list[PairResult]:
    """Plays the pairs ``pairs`` (indices) one after the other and returns their results in that order."""
    player = Player(config, stop, on_game)
    try:
        return [player.play_pair(pair) for pair in pairs]
    finally:
        player.close()


@dataclass
class Tally:
    """Counts over pair results, from the first engine's side. Only complete pairs enter the pentanomial
    (and so the Elo and the SPRT); W/D/L, endings and faults count every played game."""
    names: tuple[str, str]
    penta: list[int] = field(default_factory=lambda: [0] * 5)
    wins: int = 0
    draws: int = 0
    losses: int = 0
    white_wins: int = 0
    black_wins: int = 0
    played: int = 0
    unplayed: int = 0
    aborted: int = 0
    incomplete_pairs: int = 0
    faults: dict = field(default_factory=dict)
    reasons: collections.Counter = field(default_factory=collections.Counter)

    def __post_init__(self):
        for name in self.names:
            self.faults.setdefault(name, {kind: 0 for kind in FAULT_KINDS})

    @classmethod
    def from_pairs(cls, names, pairs) -> Tally:
        tally = cls(tuple(names))
        for pair in pairs:
            tally.add(pair)
        return tally

    def add(self, pair: PairResult) -> None:
        first = self.names[0]
        for game in pair.games:
            if game.fault is not None:
                self.faults[game.fault_engine][game.fault] += 1
            if game.status == UNPLAYED:
                self.unplayed += 1
                continue
            if game.status == ABORTED:
                self.aborted += 1
                continue
            self.played += 1
            self.reasons[game.ending] += 1
            points = game.points(first)
            if points == 1:
                self.wins += 1
            elif points == 0:
                self.losses += 1
            else:
                self.draws += 1
            if game.result == "1-0":
                self.white_wins += 1
            elif game.result == "0-1":
                self.black_wins += 1
        if pair.complete:
            self.penta[pentanomial_index(pair.points(first))] += 1
        else:
            self.incomplete_pairs += 1

    @property
    def pairs(self) -> int:
        return sum(self.penta)

    @property
    def score(self) -> float | None:
        """The first engine's share of the points of every played game."""
        return (self.wins + self.draws / 2) / self.played if self.played else None

    def elo(self, confidence: float = 0.95) -> EloEstimate | None:
        return estimate_elo(self.penta, confidence)


@dataclass
class MatchOutcome:
    """How a match ended: ``complete``, ``sprt`` (a decision), ``failed`` (games could not be played) or
    ``interrupted`` (Ctrl-C)."""
    tally: Tally
    pairs: list[PairResult]
    status: str
    requested_games: int
    seconds: float
    decision: str | None = None
    error: str | None = None

    @property
    def not_played(self) -> int:
        """Games asked for that were neither played nor left out on purpose (SPRT decision, Ctrl-C)."""
        return self.requested_games - self.tally.played if self.status == "failed" else 0


def run_match(config: MatchConfig, pairs, *, concurrency: int = 1, sprt: Sprt | None = None,
              on_game=None, on_pair=None, stop: threading.Event | None = None) -> MatchOutcome:
    """Plays ``pairs`` (indices) with ``concurrency`` games at once.

    ``on_game(record, tally)`` and ``on_pair(result, tally)`` are called in the calling thread as games and
    pairs finish. Setting ``stop`` (from a signal handler, say) or Ctrl-C (KeyboardInterrupt in the calling
    thread) ends the match as ``interrupted``, with the engines killed and the finished games counted."""
    pairs = list(pairs)
    stop = stop if stop is not None else threading.Event()
    started = time.monotonic()
    names = config.names
    tally = Tally(names)
    results: list[PairResult] = []
    for pair in pairs:
        pair_opening(config, pair)
    todo = collections.deque(pairs)
    todo_lock = threading.Lock()
    events: queue.Queue = queue.Queue()
    players = [Player(config, stop, lambda record: events.put(("game", record)))
               for _ in range(max(1, min(concurrency, len(pairs))))]

    def work(player: Player) -> None:
        try:
            while not stop.is_set():
                with todo_lock:
                    if not todo:
                        break
                    pair = todo.popleft()
                events.put(("pair", player.play_pair(pair)))
        except Exception as exc:
            events.put(("error", exc))
        finally:
            player.close()
            events.put(("exit", player))

    threads = [threading.Thread(target=work, args=(player,), daemon=True, name=f"match-player-{i}")
               for i, player in enumerate(players)]
    status, decision, error = "complete", None, None
    running = len(threads)

    def halt() -> None:
        stop.set()
        for player in players:
            player.abort()

    def handle(kind, item) -> None:
        nonlocal status, decision, error, running
        if kind == "exit":
            running -= 1
        elif kind == "error":
            if status != "interrupted":
                status, error = "failed", f"internal error while playing: {item!r}"
            halt()
        elif kind == "game":
            if item.status == PLAYED and on_game is not None:
                on_game(item, tally)
            if item.status == UNPLAYED and status == "complete":
                status, error = "failed", item.reason
                halt()
        elif kind == "pair":
            results.append(item)
            tally.add(item)
            if on_pair is not None:
                on_pair(item, tally)
            if sprt is not None and status == "complete" and item.complete:
                decision = sprt.decision(tally.penta)
                if decision is not None:
                    status = "sprt"
                    halt()

    try:
        for thread in threads:
            thread.start()
        while running:
            if stop.is_set() and status == "complete":
                status = "interrupted"
                halt()
            try:
                kind, item = events.get(timeout=0.25)
            except queue.Empty:
                continue
            handle(kind, item)
    except KeyboardInterrupt:
        status = "interrupted"
        halt()
        deadline = time.monotonic() + 15
        while running and time.monotonic() < deadline:
            try:
                kind, item = events.get(timeout=0.25)
            except queue.Empty:
                continue
            except KeyboardInterrupt:
                continue
            handle(kind, item)
    except BaseException:
        halt()
        raise
    results.sort(key=lambda result: result.pair)
    return MatchOutcome(tally=tally, pairs=results, status=status, requested_games=2 * len(pairs),
                        seconds=time.monotonic() - started, decision=decision, error=error)

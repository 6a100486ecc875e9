"""What a match is: two engines, the limits of a move, the book and the adjudication rules.

Everything here is frozen and picklable, so one ``MatchConfig`` can be sent to any process that plays pairs.
The ``parse_*`` helpers turn command-line text into these objects and raise ``ValueError`` with a message
meant for the user.
"""
from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field

ALL_ENGINES = "*"


@dataclass(frozen=True)
class EngineSpec:
    """One engine: the name it is reported under, the command that starts it and its UCI options."""
    name: str
    command: tuple[str, ...]
    options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Limits:
    """The limits of every search. ``base``/``inc`` (seconds) make a clock the runner keeps for each side;
    ``movetime`` is seconds a move; ``nodes`` and ``depth`` go to the engine as they are. Any combination but
    a clock with a move time."""
    base: float | None = None
    inc: float = 0.0
    movetime: float | None = None
    nodes: int | None = None
    depth: int | None = None

    def __post_init__(self):
        if self.base is None and self.movetime is None and self.nodes is None and self.depth is None:
            raise ValueError("give a limit: --tc, --movetime, --nodes or --depth")
        if self.base is not None and self.movetime is not None:
            raise ValueError("--tc and --movetime exclude each other")

    @property
    def clock(self) -> bool:
        return self.base is not None

    @property
    def timed(self) -> bool:
        """Whether overrunning is a loss on time (a clock or a move time), rather than a hang."""
        return self.base is not None or self.movetime is not None

    def describe(self) -> str:
        parts = []
        if self.base is not None:
            parts.append(f"tc {_seconds(self.base)}+{_seconds(self.inc)}")
        if self.movetime is not None:
            parts.append(f"movetime {_seconds(self.movetime)}s")
        if self.nodes is not None:
            parts.append(f"nodes {self.nodes}")
        if self.depth is not None:
            parts.append(f"depth {self.depth}")
        return ", ".join(parts)

    def pgn_time_control(self) -> str:
        """The PGN ``TimeControl`` tag: ``base+inc`` or ``*movetime`` in seconds, ``-`` without a time limit."""
        if self.base is not None:
            return f"{_seconds(self.base)}+{_seconds(self.inc)}" if self.inc else _seconds(self.base)
        if self.movetime is not None:
            return f"*{_seconds(self.movetime)}"
        return "-"


@dataclass(frozen=True)
class Adjudication:
    """When a game is ended before the rules end it. Scores are centipawns from the engines' ``info`` lines.

    Draw: after ``draw_move`` full moves, both engines reported ``|score| <= draw_score`` on each of their last
    ``draw_count`` moves. Resign: on each of the last ``resign_count`` moves of both engines the scores agree
    that one side is ``resign_score`` or more behind (fishtest's two-sided rule, so one engine's misjudgement
    cannot end a game). ``max_moves`` (full moves, 0: none) ends a game as a draw."""
    draw: bool = True
    draw_move: int = 34
    draw_count: int = 8
    draw_score: int = 20
    resign: bool = True
    resign_count: int = 3
    resign_score: int = 400
    max_moves: int = 0


@dataclass(frozen=True)
class MatchConfig:
    """Everything that decides how a pair of games is played, and nothing about how many are played or where.

    ``book`` is the opening file; pair ``p`` opens with line ``opening_order(...)[p % len(book)]`` (a shuffle
    seeded by ``seed``, or the file's order). ``margin`` is the time an engine may overrun before it loses on
    time; ``hang_timeout`` bounds answers that have no clock (``readyok``, searches by nodes or depth);
    ``startup_timeout`` bounds the start of an engine up to ``readyok``."""
    engines: tuple[EngineSpec, EngineSpec]
    limits: Limits
    book: str
    seed: int = 0
    book_order: str = "random"
    adjudication: Adjudication = field(default_factory=Adjudication)
    margin: float = 0.1
    hang_timeout: float = 60.0
    startup_timeout: float = 120.0

    def __post_init__(self):
        if len(self.engines) != 2:
            raise ValueError("a match needs exactly two engines")
        if self.engines[0].name == self.engines[1].name:
            raise ValueError(f"both engines are named {self.engines[0].name!r}; give them different names")
        if self.book_order not in ("random", "sequential"):
            raise ValueError(f"book order must be random or sequential, not {self.book_order!r}")

    @property
    def names(self) -> tuple[str, str]:
        return self.engines[0].name, self.engines[1].name


def _seconds(value: float) -> str:
    return f"{value:g}"


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{what}: {text!r} is not a finite number")
    return value


def parse_tc(text: str) -> tuple[float, float]:
    """``BASE+INC`` or ``BASE`` in seconds, e.g. ``10+0.1`` -> (10.0, 0.1)."""
    base_text, _, inc_text = text.strip().partition("+")
    base = _number(base_text, f"time control {text!r}")
    inc = _number(inc_text, f"time control {text!r}") if inc_text else 0.0
    if base <= 0:
        raise ValueError(f"time control {text!r}: the base time must be more than 0 seconds")
    if inc < 0:
        raise ValueError(f"time control {text!r}: the increment cannot be negative")
    return base, inc


def parse_engine(text: str) -> tuple[str, tuple[str, ...]]:
    """``NAME=COMMAND`` -> (name, argv), the command split like a shell would."""
    name, sep, command = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ValueError(f"engine {text!r}: write NAME=COMMAND, e.g. sf=/usr/games/stockfish")
    if "." in name or name == ALL_ENGINES:
        raise ValueError(f"engine name {name!r}: a name cannot be '*' or contain '.'")
    try:
        argv = tuple(shlex.split(command))
    except ValueError as exc:
        raise ValueError(f"engine {name}: cannot split the command {command!r}: {exc}") from None
    if not argv:
        raise ValueError(f"engine {name}: the command is empty")
    return name, argv


def parse_option(text: str, names) -> tuple[str, str, str]:
    """``NAME.OPTION=VALUE`` -> (engine name or ``*``, option, value)."""
    key, sep, value = text.partition("=")
    engine, dot, option = key.partition(".")
    engine, option = engine.strip(), option.strip()
    if not sep or not dot or not engine or not option:
        raise ValueError(f"option {text!r}: write NAME.OPTION=VALUE, e.g. sf.Hash=64 or '*.Threads=1'")
    if engine != ALL_ENGINES and engine not in names:
        raise ValueError(f"option {text!r}: no engine named {engine!r} (engines: {', '.join(names)}; "
                         f"'*' for both)")
    return engine, option, value.strip()


def parse_bounds(text: str) -> tuple[float, float]:
    """``ELO0,ELO1`` -> (elo0, elo1) with elo0 < elo1."""
    parts = text.replace(" ", "").split(",")
    if len(parts) != 2:
        raise ValueError(f"SPRT bounds {text!r}: write ELO0,ELO1, e.g. 0,5")
    elo0, elo1 = (_number(part, f"SPRT bounds {text!r}") for part in parts)
    if not elo0 < elo1:
        raise ValueError(f"SPRT bounds {text!r}: ELO0 must be less than ELO1")
    if max(abs(elo0), abs(elo1)) >= 1000:
        raise ValueError(f"SPRT bounds {text!r}: Elo bounds must lie within (-1000, 1000)")
    return elo0, elo1


def build_engines(engine_texts, option_texts) -> tuple[EngineSpec, EngineSpec]:
    """The two ``EngineSpec`` of ``--engine`` and ``--option`` texts; options for ``*`` come first, so an
    engine's own value wins."""
    if len(engine_texts) != 2:
        raise ValueError(f"give exactly two engines with --engine NAME=COMMAND (got {len(engine_texts)})")
    parsed = [parse_engine(text) for text in engine_texts]
    names = [name for name, _ in parsed]
    if names[0] == names[1]:
        raise ValueError(f"both engines are named {names[0]!r}; give them different names")
    options = [parse_option(text, names) for text in option_texts]
    specs = []
    for name, argv in parsed:
        chosen: dict[str, tuple[str, str]] = {}
        for wanted in (ALL_ENGINES, name):
            for engine, option, value in options:
                if engine == wanted:
                    chosen[option.lower()] = (option, value)
        specs.append(EngineSpec(name, argv, tuple(chosen.values())))
    return specs[0], specs[1]

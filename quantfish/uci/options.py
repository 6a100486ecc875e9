"""The UCI options: each states its type and range, and carries the handler that applies a new value.

``setoption`` parses the value by the option's kind (``Option.parse``), then calls its handler, which applies
it to the engine (resizes the table, loads a net, opens tablebases...) and may refuse it with ``UciError``: the
option keeps its old value then. An option without a handler is read when it is needed (``MultiPV`` at the
next ``go``). The table of options is ``option_table``; its handlers are the engine's methods, bound by name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from quantfish.nnue.locate import DEFAULT_NET_NAME, SMALL_NET_NAME
from quantfish.uci.parse import UciError

SPIN, CHECK, STRING, COMBO, BUTTON = "spin", "check", "string", "combo", "button"


@dataclass
class Option:
    name: str
    kind: str
    default: object = None
    lo: Optional[int] = None
    hi: Optional[int] = None
    choices: tuple = ()
    on_change: Optional[Callable[["Option", object], None]] = None
    """Applies a new value (``value`` already parsed); raises ``UciError`` to refuse it."""
    value: object = field(default=None, init=False)

    def __post_init__(self):
        self.value = self.default

    def describe(self) -> str:
        text = f"option name {self.name} type {self.kind}"
        if self.kind == SPIN:
            text += f" default {self.default} min {self.lo} max {self.hi}"
        elif self.kind == CHECK:
            text += f" default {'true' if self.default else 'false'}"
        elif self.kind == STRING:
            text += f" default {self.default}"
        elif self.kind == COMBO:
            text += f" default {self.default}" + "".join(f" var {c}" for c in self.choices)
        return text

    def parse(self, text):
        """``text`` (None when ``value`` was not given) as this option's value, or ``UciError``."""
        if self.kind == SPIN:
            try:
                v = int(text)
            except (TypeError, ValueError):
                raise UciError(f"option {self.name} needs an integer, got {text!r}") from None
            if not self.lo <= v <= self.hi:
                raise UciError(f"option {self.name} must be between {self.lo} and {self.hi}, got {v}")
            return v
        if self.kind == CHECK:
            if text is None or text.lower() not in ("true", "false"):
                raise UciError(f"option {self.name} needs true or false, got {text!r}")
            return text.lower() == "true"
        if self.kind == COMBO:
            for c in self.choices:
                if text is not None and text.lower() == c.lower():
                    return c
            raise UciError(f"option {self.name} must be one of {', '.join(self.choices)}, got {text!r}")
        if self.kind == STRING:
            if text is None or text == "":
                raise UciError(f"option {self.name} needs a value")
            return text
        return None

    def set(self, text) -> None:
        """Parse ``text``, apply it through the handler, then keep it (a refusal leaves the old value)."""
        value = self.parse(text)
        if self.on_change is not None:
            self.on_change(self, value)
        if self.kind != BUTTON:
            self.value = value


class Options(dict):
    """The options by lower-case name (UCI names are case-insensitive), in the order ``uci`` lists them."""

    def __init__(self, options):
        super().__init__((o.name.lower(), o) for o in options)

    def value(self, name: str):
        """The current value of option ``name`` (any case)."""
        return self[name.lower()].value


def option_table(engine) -> Options:
    """Every option, with ``engine``'s handlers (methods named ``on_<option>``)."""
    h = lambda name: getattr(engine, name, None)
    return Options([
        Option("Threads", SPIN, 1, 1, 256, on_change=h("on_threads")),
        Option("Hash", SPIN, 16, 1, 16384, on_change=h("on_hash")),
        Option("Clear Hash", BUTTON, on_change=h("on_clear_hash")),
        Option("Ponder", CHECK, False),
        Option("MultiPV", SPIN, 1, 1, 256),
        Option("Move Overhead", SPIN, 10, 0, 5000),
        Option("UCI_Chess960", CHECK, False),
        Option("UCI_ShowWDL", CHECK, False),
        Option("Skill Level", SPIN, 20, 0, 20),
        Option("UCI_LimitStrength", CHECK, False),
        Option("UCI_Elo", SPIN, 1320, 1320, 2850),
        Option("SyzygyPath", STRING, "<empty>", on_change=h("on_syzygy_path")),
        Option("SyzygyProbeLimit", SPIN, 7, 0, 7),
        Option("Syzygy50MoveRule", CHECK, True),
        Option("SyzygyProbeDepth", SPIN, 1, 1, 100),
        Option("EvalFile", STRING, DEFAULT_NET_NAME, on_change=h("on_eval_file")),
        Option("EvalFileSmall", STRING, SMALL_NET_NAME, on_change=h("on_eval_file")),
        Option("NNUE Path", COMBO, "auto", choices=("auto", "c", "numba"), on_change=h("on_nnue_path")),
    ])

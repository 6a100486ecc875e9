"""How far a scheme's integers are from the float net: end to end in centipawns, and layer by layer.

End to end, the simulator's ``raw`` (internal units) against the float output on the same positions, in
Stockfish 15.1 centipawns (100 / 361 of an internal unit): mean absolute error, 99th percentile, maximum,
bias (mean signed error) and sign agreement (both say the side to move is better, or both do not).

Per layer: the integer range used against its type or clamp, the fraction of values at the top (saturated)
and at zero, the fraction the integer top cut off although the float function did not (clipped: the float
value lies above the top by more than half a step), and the SQNR, ``10 log10(sum f^2 / sum (f - q)^2)`` dB,
of the dequantised integers ``q`` against the float values ``f``. Weights are compared with the float
weights, activations with the float forward pass of the same positions through the same stacks.

In play, the one-ply best-move agreement (``quantfish.quant.bestmove``): how often the integer net's choice among
the legal moves is the float net's, and the float value a different choice gives up.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from quantfish.nnue.architecture import N_HIDDEN
from quantfish.quant import bestmove
from quantfish.quant.bestmove import BestMove, Children
from quantfish.quant.build import QuantNet
from quantfish.quant.floatnet import SKIP, FloatNet, FloatTrace
from quantfish.quant.simulator import Accumulators, IntTrace, simulate
from quantfish.nnue.units import PAWN_VALUE_NORMALIZE

CP_PER_UNIT = 100.0 / PAWN_VALUE_NORMALIZE
EXACT_DB = 200.0       # above this SQNR the only error is float64 rounding of the reference


class EndToEnd(NamedTuple):
    positions: int
    mae: float       # centipawns
    p99: float
    max: float
    bias: float
    sign: float      # fraction of positions where integer and float agree on the sign


class LayerRow(NamedTuple):
    layer: str
    kind: str        # weights, sum, activation, output
    lo: int          # smallest and largest integer seen
    hi: int
    limit: int       # the type's or the clamp's largest value
    saturated: float
    zero: float
    clipped: float
    sqnr: float      # dB (inf: no error)


class Failure(NamedTuple):
    """A combination the quantiser refused (an integer type would overflow), with its reason."""

    scheme: str
    rounding: str
    resolution: int
    error: str


class Report(NamedTuple):
    scheme: str
    rounding: str
    resolution: int
    end_to_end: EndToEnd
    layers: tuple
    best_move: BestMove | None = None

    def to_dict(self) -> dict:
        bm = self.best_move
        return {"scheme": self.scheme, "rounding": self.rounding, "resolution": self.resolution,
                "end_to_end": self.end_to_end._asdict(),
                "best_move": None if bm is None else {k: _json_float(v) for k, v in bm._asdict().items()},
                "layers": [{k: _json_float(v) for k, v in row._asdict().items()} for row in self.layers]}


def _json_float(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def end_to_end(raw: np.ndarray, out: np.ndarray) -> EndToEnd:
    """Centipawn error statistics of integer ``raw`` against float ``out`` (both internal units)."""
    err = (np.asarray(raw, np.float64) - out) * CP_PER_UNIT
    a = np.abs(err)
    return EndToEnd(len(err), float(a.mean()), float(np.percentile(a, 99)), float(a.max()), float(err.mean()),
                    float(np.mean((raw > 0) == (out > 0))))


def sqnr(f: np.ndarray, q: np.ndarray) -> float:
    noise = float(np.sum((np.asarray(f, np.float64) - q) ** 2))
    signal = float(np.sum(np.asarray(f, np.float64) ** 2))
    if noise == 0:
        return math.inf
    return 10 * math.log10(signal / noise) if signal > 0 else -math.inf


def _row(layer: str, kind: str, ints: np.ndarray, limit: int, f: np.ndarray, scale, top=None) -> LayerRow:
    """One row: ``ints`` against float ``f``; ``scale`` broadcasts against ``ints``; ``top`` is the clamp."""
    ints = np.asarray(ints)
    deq = ints / np.asarray(scale, np.float64)
    top = limit if top is None else top
    top = np.asarray(top)
    at_top = np.abs(ints) >= top
    clipped = f * np.asarray(scale) > top + 0.5 if kind == "activation" else np.zeros(ints.shape, bool)
    return LayerRow(layer, kind, int(ints.min(initial=0)), int(ints.max(initial=0)), int(limit),
                    float(at_top.mean()), float((ints == 0).mean()), float(clipped.mean()), sqnr(f, deq))


def _per_stack(values: list, stack: np.ndarray) -> np.ndarray:
    """Per-position rows of a per-stack quantity (``values[s]`` broadcast to a row)."""
    return np.asarray([np.broadcast_to(np.asarray(v, np.float64), np.shape(values[0])) for v in values])[stack]


def layer_rows(qnet: QuantNet, fnet: FloatNet, it: IntTrace, ft: FloatTrace, stack: np.ndarray) -> tuple:
    """The per-layer table for one simulated batch (positions through ``stack``)."""
    sch = qnet.scheme
    l1 = qnet.l1
    st = sch.stacks
    rows = [_row("ft weights", "weights", qnet.ft_weights, 32767, fnet.ft_weights, sch.ft_scale)]
    a_int = np.clip(it.acc, 0, sch.ft_hi)
    rows.append(_row("ft accumulator", "sum", it.acc, 32767, ft.acc, sch.ft_scale))
    rows.append(_row("ft clamp", "activation", a_int, sch.ft_hi, np.clip(ft.acc, 0, 1), sch.ft_scale, sch.ft_hi))
    rows.append(_row("x (fc_0 input)", "activation", it.x, sch.x.hi[0], ft.x, sch.x.scale[0], sch.x.hi[0]))
    rows.append(_row("psqt weights", "weights", qnet.ft_psqt, 2**31 - 1, fnet.ft_psqt, sch.psqt_scale))

    def weights(name, wq, wf, wscale):
        return _row(f"{name} weights", "weights", wq, 127, wf, wscale)

    s_x = sch.x.scale[0]
    a0 = np.asarray([s.fc_0.acc_scale for s in st])
    rows.append(weights("fc_0", qnet.w0[:, :, :l1], fnet.w0, a0[:, :, None] / s_x))
    rows.append(_row("fc_0 sum", "sum", it.z0, 2**31 - 1, ft.z0, a0[stack]))
    sq_scale = _per_stack([s.ac_sqr_0.scale for s in st], stack)
    h_scale = _per_stack([s.ac_0.scale for s in st], stack)
    f_sq, f_h = ft.l1in[:, :N_HIDDEN], ft.l1in[:, N_HIDDEN:]
    rows.append(_row("ac_sqr_0", "activation", it.l1in[:, :N_HIDDEN], sch.resolution, f_sq, sq_scale,
                     _per_stack([s.ac_sqr_0.hi for s in st], stack)))
    rows.append(_row("ac_0", "activation", it.l1in[:, N_HIDDEN:], sch.resolution, f_h, h_scale,
                     _per_stack([s.ac_0.hi for s in st], stack)))
    in1 = np.asarray([np.concatenate([s.ac_sqr_0.scale, s.ac_0.scale]) for s in st])
    a1 = np.asarray([s.fc_1.acc_scale for s in st])
    rows.append(weights("fc_1", qnet.w1[:, :, :2 * N_HIDDEN], fnet.w1, a1[:, :, None] / in1[:, None, :]))
    rows.append(_row("fc_1 sum", "sum", it.z1, 2**31 - 1, ft.z1, a1[stack]))
    rows.append(_row("ac_1", "activation", it.c1, sch.resolution, ft.c1,
                     _per_stack([s.ac_1.scale for s in st], stack), _per_stack([s.ac_1.hi for s in st], stack)))
    a2 = np.asarray([s.fc_2.acc_scale[0] for s in st])
    c1s = np.asarray([s.ac_1.scale for s in st])
    rows.append(weights("fc_2", qnet.w2[:, :c1s.shape[1]], fnet.w2, a2[:, None] / c1s))
    rows.append(_row("fc_2 sum", "sum", it.z2, 2**31 - 1, ft.z2, a2[stack]))
    rows.append(_row("skip (fc0[15])", "sum", it.z0[:, SKIP], 2**31 - 1, ft.z0[:, SKIP], a0[stack, SKIP]))
    rows.append(_row("output", "output", it.raw, 2**31 - 1, ft.out, 1.0))
    return tuple(rows)


def compare(qnet: QuantNet, fnet: FloatNet, positions, ftrace: FloatTrace | None = None,
            accumulators: Accumulators | None = None, layers: bool = True) -> Report:
    """The report of ``qnet`` against ``fnet`` on ``positions`` (each through its own bucket's stack)."""
    ft = ftrace if ftrace is not None else fnet.forward(positions)
    it = simulate(qnet, positions, accumulators=accumulators)
    return _report(qnet, fnet, positions, ft, it, layers)


def _report(qnet: QuantNet, fnet: FloatNet, positions, ft: FloatTrace, it: IntTrace, layers: bool) -> Report:
    sch = qnet.scheme
    rows = layer_rows(qnet, fnet, it, ft, positions.bucket) if layers else ()
    return Report(sch.name, sch.rounding, sch.resolution, end_to_end(it.raw, ft.out), rows)


# ---------------------------------------------------------------------------------------------------------
# Text

def format_summary(reports) -> str:
    """One line per report: the end-to-end errors, and the one-ply best-move agreement when measured."""
    moves = any(isinstance(r, Report) and r.best_move is not None for r in reports)
    lines = [f"{'scheme':<10} {'rounding':<8} {'res':>4} {'positions':>9} {'MAE cp':>7} {'p99':>7} {'max':>7} "
             f"{'bias':>7} {'sign':>7}" + (f" {'best move':>9} {'loss cp':>7}" if moves else "")]
    for r in reports:
        if isinstance(r, Failure):
            lines.append(f"{r.scheme:<10} {r.rounding:<8} {r.resolution:>4} refused: {r.error}")
            continue
        e = r.end_to_end
        line = (f"{r.scheme:<10} {r.rounding:<8} {r.resolution:>4} {e.positions:>9} {e.mae:>7.3f} "
                f"{e.p99:>7.2f} {e.max:>7.2f} {e.bias:>+7.3f} {e.sign * 100:>6.2f}%")
        if r.best_move is not None:
            line += f" {r.best_move.agreement * 100:>8.2f}% {r.best_move.cp_loss:>7.3f}"
        lines.append(line)
    if moves:
        bm = next(r.best_move for r in reports if isinstance(r, Report) and r.best_move is not None)
        lines.append(f"best move: one-ply choice agrees with the float net's, on {bm.positions} positions with a "
                     f"choice; loss: the float value the integer choice gives up (cp, mean)")
    return "\n".join(lines)


def format_layers(report: Report) -> str:
    """The per-layer table of one report."""
    lines = [f"{report.scheme} ({report.rounding}, resolution {report.resolution}), per layer:",
             f"  {'layer':<16} {'kind':<10} {'range used':>21} {'sat':>7} {'zero':>7} {'clipped':>8} {'SQNR dB':>8}"]
    for row in report.layers:
        used = f"{row.lo}..{row.hi} of {row.limit}"
        q = "exact" if row.sqnr > EXACT_DB else f"{row.sqnr:.1f}"
        lines.append(f"  {row.layer:<16} {row.kind:<10} {used:>21} {row.saturated * 100:>6.2f}% "
                     f"{row.zero * 100:>6.2f}% {row.clipped * 100:>7.3f}% {q:>8}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# Many schemes on the same positions

def child_values(fnet: FloatNet, qnets: list, kids: Children, chunk: int = 2048):
    """The float net's and each integer net's values of every child (internal units), ``chunk`` children at a
    time so that the accumulators of a few hundred thousand children never sit in memory at once."""
    from quantfish.quant.simulator import accumulate

    n = len(kids.positions)
    out = np.empty(n)
    ints = [np.empty(n, np.int64) for _ in qnets]
    for i in range(0, n, chunk):
        part = kids.positions.take(slice(i, i + chunk))
        out[i:i + chunk] = fnet.forward(part).out
        cache = {}
        for q, qnet in enumerate(qnets):
            key = qnet.scheme.ft_scale
            if key not in cache:
                cache[key] = accumulate(qnet, part)
            ints[q][i:i + chunk] = simulate(qnet, part, accumulators=cache[key]).raw
    return out, ints


def run(fnet: FloatNet, positions, names, roundings=None, resolutions=(127,), stats=None,
        layers: bool = False, kids: Children | None = None, plot_dir=None, progress: bool = False,
        bias_positions=None) -> list:
    """A ``Report`` (or ``Failure``) per scheme x rounding x resolution, all on ``positions``.

    ``roundings`` None uses each scheme's default. The float pass runs once; the FT sums once per FT scale
    (schemes that share the FT scale share its integers). ``kids`` (``bestmove.children`` of some of the
    positions) adds the one-ply best-move agreement to each report. ``plot_dir`` (an existing folder) gets
    ``quantfish.quant.plots``'s figures. ``progress`` shows a bar over the schemes on stderr.
    ``bias_positions`` (calibration positions) adds each scheme again with bias correction (``<name>+bc``,
    ``quantfish.quant.biascorr``).
    """
    from quantfish.quant import schemes
    from quantfish.runtime.progress import progress_bar
    from quantfish.quant.build import QuantError
    from quantfish.quant.simulator import accumulate

    plan = [(name, rounding, res) for name in names for rounding in (roundings or (schemes.default_rounding(name),))
            for res in resolutions]
    bar = progress_bar(2 * len(plan), "quant-report", "step", enabled=progress)
    built = []
    for name, rounding, res in plan:
        bar.set_postfix_str(f"quantising {name}")
        try:
            built.append(schemes.make(name, fnet, stats, rounding, res))
        except QuantError as exc:
            built.append(Failure(name, rounding, res, str(exc)))
        if bias_positions is not None and not isinstance(built[-1], Failure):
            from quantfish.quant.biascorr import SUFFIX, bias_correct
            try:
                built.append(bias_correct(built[-1], fnet, bias_positions))
            except QuantError as exc:
                built.append(Failure(name + SUFFIX, rounding, res, str(exc)))
        bar.update()
    qnets = [q for q in built if not isinstance(q, Failure)]
    moves = {}
    if kids is not None:
        fchild, ichild = child_values(fnet, qnets, kids)
        moves = {id(q): bestmove.agreement(kids, fchild, v, CP_PER_UNIT) for q, v in zip(qnets, ichild)}
    ft = fnet.forward(positions)
    cache = {}
    out = []
    for qnet in built:
        bar.update()
        if isinstance(qnet, Failure):
            out.append(qnet)
            continue
        bar.set_postfix_str(f"measuring {qnet.scheme.name}")
        key = qnet.scheme.ft_scale
        if key not in cache:
            cache[key] = accumulate(qnet, positions)
        it = simulate(qnet, positions, accumulators=cache[key])
        rep = _report(qnet, fnet, positions, ft, it, layers)._replace(best_move=moves.get(id(qnet)))
        if plot_dir is not None:
            from quantfish.quant import plots
            plots.scheme_figure(rep, qnet.scheme, ft, it, Path(plot_dir) / plots.file_name(rep), CP_PER_UNIT)
        out.append(rep)
    bar.close()
    if plot_dir is not None:
        from quantfish.quant import plots
        plots.summary_figure(out, Path(plot_dir) / "summary.png")
    return out

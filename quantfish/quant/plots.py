"""PNG plots for ``quant-report --plots``: where each scheme clips the activations, and how its error spreads.

One figure per scheme x rounding x resolution: the float net's values at the five places an integer type
clamps them (the accumulator, fc_0's input, fc_0's hidden outputs before ClippedReLU and squared before
SqrClippedReLU, fc_1's outputs), log-scaled histograms with the float value where the scheme's integers
saturate (the median over rows and stacks; a band when rows differ), and the histogram of the integer net's
error against the float net in centipawns. ``summary.png`` puts every scheme's mean absolute error side by
side. Needs matplotlib (``make plot-deps``), imported only here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from quantfish.nnue.architecture import N_HIDDEN
from quantfish.quant.floatnet import SQR, FloatTrace
from quantfish.quant.simulator import IntTrace

MATPLOTLIB_MISSING = "--plots needs matplotlib (make plot-deps)"


def pyplot_or_fail():
    try:
        import matplotlib
    except ImportError:
        raise ImportError(MATPLOTLIB_MISSING) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _tops(activations) -> np.ndarray:
    """The float values at which each row's integer saturates (hi / scale), over every given activation."""
    return np.concatenate([np.asarray(a.hi, np.float64) / np.asarray(a.scale, np.float64) for a in activations])


def sites(scheme, ft: FloatTrace) -> list:
    """(title, float values, saturation tops) for each clamped place of the pass."""
    st = scheme.stacks
    h = ft.z0[:, :N_HIDDEN]
    return [("accumulator (FT clamp)", ft.acc, np.asarray([scheme.ft_hi / scheme.ft_scale])),
            ("fc_0 input (pairwise product)", ft.x, _tops([scheme.x])),
            ("fc_0 hidden (ac_0)", h, _tops([s.ac_0 for s in st])),
            ("fc_0 hidden squared (ac_sqr_0)", h * h * SQR, _tops([s.ac_sqr_0 for s in st])),
            ("fc_1 output (ac_1)", ft.z1, _tops([s.ac_1 for s in st]))]


def scheme_figure(report, scheme, ft: FloatTrace, it: IntTrace, path, cp_per_unit: float) -> Path:
    """The figure of one report; returns the file written."""
    plt = pyplot_or_fail()
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    for ax, (title, values, tops) in zip(axes.flat, sites(scheme, ft)):
        v = np.asarray(values, np.float64).ravel()
        top = float(np.median(tops))
        ax.hist(v, bins=200, range=(min(v.min(), 0.0), max(v.max(), top * 1.05)), color="#4c72b0", log=True)
        if tops.min() < tops.max():
            ax.axvspan(tops.min(), tops.max(), color="#dd8452", alpha=0.25, label="clips (rows, stacks)")
        ax.axvline(top, color="#c44e52", label=f"saturates at {top:.3g}")
        ax.axvline(0.0, color="#555555", linewidth=0.8)
        share = float(np.mean(v > top))
        ax.set_title(f"{title}\n{share * 100:.3f}% above the clip", fontsize=10)
        ax.legend(fontsize=8)
    err = (np.asarray(it.raw, np.float64) - ft.out) * cp_per_unit
    ax = axes.flat[5]
    ax.hist(err, bins=100, color="#55a868")
    e = report.end_to_end
    ax.set_title(f"integer - float (cp): MAE {e.mae:.3f}, bias {e.bias:+.3f}, p99 {e.p99:.2f}", fontsize=10)
    fig.suptitle(f"{report.scheme}, {report.rounding} rounding, activations 0..{report.resolution} "
                 f"({e.positions} positions)")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out


def summary_figure(reports, path) -> Path:
    """Mean absolute error of every report, side by side."""
    plt = pyplot_or_fail()
    rows = [r for r in reports if hasattr(r, "end_to_end")]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows) + 2), 4.5))
    labels = [f"{r.scheme}\n{r.rounding}\n{r.resolution}" for r in rows]
    ax.bar(range(len(rows)), [r.end_to_end.mae for r in rows], color="#4c72b0")
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.set_ylabel("cp MAE against the float net")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out


def file_name(report) -> str:
    return f"{report.scheme}-{report.rounding}-{report.resolution}.png"

"""``quantfish quant-report`` and ``quantfish quantize``: compare quantisation schemes, write a quantised net.

    quantfish quant-report NET_OR_CHECKPOINT --positions FILE [--scheme NAME ...|all]
                           [--rounding floor|nearest|both] [--resolution 127|255|both]
                           [--calibration FILE] [--limit N] [--best-move N] [--layers]
                           [--bit-widths [--margin CP]] [--plots DIR] [--json]
    quantfish quantize SOURCE -o NET --scheme NAME [--rounding floor|nearest] [--resolution 127|255]
                       [--calibration FILE]

The source is a Stockfish .nnue (dequantised with the fixed scales) or a training checkpoint, Quantfish's or
nnue-pytorch's (its state dict, alone or in a Lightning .ckpt; needs PyTorch).
Positions are one FEN or EPD line each. Schemes other than ``sf`` calibrate their activation ranges on
``--calibration`` positions; without that option ``quant-report`` takes the first quarter of ``--positions``
(at most 1000) for calibration and reports on the rest, so no position is used for both. ``--best-move N``
adds the one-ply best-move agreement on the first N reported positions (``quantfish.quant.bestmove``),
``--bit-widths`` Ristretto's bit-width search (``quantfish.quant.bitwidth``), ``--plots DIR`` the figures of
``quantfish.quant.plots`` (matplotlib, an optional extra).

``quantize`` writes a plain Stockfish .nnue when the scheme is Stockfish's fixed arithmetic (``sf``, floor,
127); any other scheme's scales cannot be stated in that format, so it writes a Quantfish-format net
(``quantfish.nnue.io.quantfish``), which Stockfish refuses and the engine plays (``EvalFile``, ``--net``).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

NAMES = ("sf", "range", "range-row", "dfp", "kl", "mse")
MAX_CALIBRATION = 1000
BEST_MOVE_POSITIONS = 500


def _errors():
    from quantfish.nnue.net import NetFileError
    from quantfish.quant.build import QuantError
    from quantfish.quant.positions import PositionError
    from quantfish.quant.schemes import SchemeError
    return (NetFileError, QuantError, PositionError, SchemeError, ImportError, OSError, ValueError)


def _load(source: str):
    from quantfish.quant.floatnet import load
    return load(source)


def _split(positions, calibration: str | None, needed: bool):
    """(calibration positions or None, positions to report on, a note for the reader or "")."""
    from quantfish.quant.positions import read_positions
    if calibration:
        return read_positions(calibration), positions, ""
    if not needed:
        return None, positions, ""
    k = min(MAX_CALIBRATION, len(positions) // 4)
    if k < 1:
        raise click.ClickException("too few positions to set some aside for calibration: give --calibration")
    note = f"calibrated on the first {k} positions, reporting on the other {len(positions) - k}"
    return positions.take(slice(0, k)), positions.take(slice(k, None)), note


@click.command("quant-report")
@click.argument("source", type=click.Path(dir_okay=False, exists=True))
@click.option("--positions", "positions_file", required=True, type=click.Path(dir_okay=False, exists=True),
              help="Positions to measure on, one FEN or EPD line each.")
@click.option("--scheme", "scheme_names", multiple=True, type=click.Choice(NAMES + ("all",)),
              help="Scheme to measure (repeatable; 'all' for every one). Default: sf.")
@click.option("--rounding", type=click.Choice(["floor", "nearest", "both"]), default=None,
              help="Requantisation rounding (default: floor for sf, nearest for the others).")
@click.option("--resolution", type=click.Choice(["127", "255", "both"]), default="127", show_default=True,
              help="Activations stored in 0..127 or 0..255.")
@click.option("--calibration", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Positions for the activation ranges (default: the first quarter of --positions).")
@click.option("--limit", type=click.IntRange(1, None), default=None, help="Use only the first N positions.")
@click.option("--best-move", "best_move", type=click.IntRange(0, None), default=BEST_MOVE_POSITIONS,
              show_default=True,
              help="Compare the one-ply best move of the integer and float nets on the first N reported "
                   "positions (every legal move is evaluated: about 35 evaluations a position); 0: off.")
@click.option("--layers", is_flag=True, help="Also print the per-layer table of each scheme.")
@click.option("--bit-widths", "bit_widths", is_flag=True,
              help="Also run Ristretto's bit-width search: the fewest bits per layer group within --margin.")
@click.option("--margin", type=click.FloatRange(0, None, min_open=True), default=1.0, show_default=True,
              help="The bit-width search's allowed error, cp MAE against the float net.")
@click.option("--plots", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Write PNG figures here: activation histograms with each scheme's clips, the error "
                   "distribution, and a summary (needs matplotlib: make plot-deps).")
@click.option("--bias-correction", "bias_correction", is_flag=True,
              help="Also report each scheme with its biases corrected on the calibration positions (NAME+bc).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object with every number.")
def quant_report_command(source, positions_file, scheme_names, rounding, resolution, calibration, limit, best_move,
                         layers, bit_widths, margin, plot_dir, bias_correction, as_json):
    """Quantise a float net with each scheme and measure the integers against the float net."""
    try:
        from quantfish.quant import bestmove, bitwidth, calibrate, report
        from quantfish.quant.positions import read_positions
        from quantfish.quant.schemes import CALIBRATED
        if plot_dir is not None:
            from quantfish.quant.plots import pyplot_or_fail
            pyplot_or_fail()                            # no matplotlib: say so before the long part
            Path(plot_dir).mkdir(parents=True, exist_ok=True)
        names = NAMES if "all" in scheme_names else (tuple(dict.fromkeys(scheme_names)) or ("sf",))
        roundings = ("floor", "nearest") if rounding == "both" else ((rounding,) if rounding else None)
        resolutions = (127, 255) if resolution == "both" else (int(resolution),)
        fnet = _load(source)
        positions = read_positions(positions_file, limit)
        cal, evaluate, note = _split(positions, calibration, bool(CALIBRATED & set(names)) or bias_correction)
        stats = calibrate.collect(fnet, cal) if cal is not None and CALIBRATED & set(names) else None
        kids = bestmove.children(evaluate.take(slice(0, best_move))) if best_move else None
        results = report.run(fnet, evaluate, names, roundings, resolutions, stats, layers=layers or as_json,
                             kids=kids, plot_dir=plot_dir, progress=True,
                             bias_positions=cal if bias_correction else None)
        widths = bitwidth.search(fnet, evaluate, margin) if bit_widths else None
    except _errors() as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps({"source": source, "positions": len(evaluate), "calibration": note or calibration,
                               "results": [r.to_dict() if isinstance(r, report.Report) else r._asdict()
                                           for r in results],
                               "bit_widths": widths.to_dict() if widths is not None else None}))
        return
    click.echo(f"{source}: integer simulator against the float net, {len(evaluate)} positions"
               + (f" ({note})" if note else ""))
    click.echo(report.format_summary(results))
    if layers:
        for r in results:
            if isinstance(r, report.Report):
                click.echo("")
                click.echo(report.format_layers(r))
    if widths is not None:
        click.echo("")
        click.echo(bitwidth.format_report(widths))
    if plot_dir is not None:
        click.echo(f"plots: {plot_dir}/summary.png and one figure per scheme")


@click.command("quantize")
@click.argument("source", type=click.Path(dir_okay=False, exists=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The net file to write.")
@click.option("--scheme", "name", required=True, type=click.Choice(NAMES))
@click.option("--rounding", type=click.Choice(["floor", "nearest"]), default=None,
              help="Requantisation rounding (default: floor for sf, nearest for the others).")
@click.option("--resolution", type=click.Choice(["127", "255"]), default="127", show_default=True)
@click.option("--calibration", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Positions for the activation ranges (every scheme but sf needs them) and bias correction.")
@click.option("--bias-correction", "bias_correction", is_flag=True,
              help="Correct fc_0's, fc_1's and fc_2's biases by their mean error on the calibration positions.")
def quantize_command(source, output, name, rounding, resolution, calibration, bias_correction):
    """Quantise a float net (a .nnue or a training checkpoint) with one scheme and write it."""
    try:
        from quantfish.nnue.io import load_net
        from quantfish.nnue.io.stockfish import write_net
        from quantfish.quant.schemes import to_net
        from quantfish.quant import calibrate, schemes
        from quantfish.nnue.io import quantfish as qformat
        from quantfish.quant.positions import read_positions
        fnet = _load(source)
        stats = None
        if name in schemes.CALIBRATED:
            if not calibration:
                raise click.ClickException(f"scheme {name} needs --calibration FILE (positions for its ranges)")
            stats = calibrate.collect(fnet, read_positions(calibration))
        qnet = schemes.make(name, fnet, stats, rounding, int(resolution))
        if bias_correction:
            if not calibration:
                raise click.ClickException("--bias-correction needs --calibration FILE (positions to measure on)")
            from quantfish.quant.biascorr import bias_correct
            qnet = bias_correct(qnet, fnet, read_positions(calibration))
        sch = qnet.scheme
        if schemes.is_stockfish(sch):
            write_net(to_net(qnet), output)
            net = load_net(output)
            click.echo(f"wrote {output}: Stockfish .nnue, {net.arch.describe()}")
        else:
            qformat.write_qnet(qnet, output)
            load_net(output)
            click.echo(f"wrote {output}: Quantfish-format net (scheme {sch.name}, {sch.rounding}, resolution "
                       f"{sch.resolution}). Its per-layer scales do not fit Stockfish's format, so Stockfish "
                       f"refuses it; Quantfish plays it (EvalFile, --net).")
    except click.ClickException:
        raise
    except _errors() as exc:
        raise click.ClickException(str(exc)) from None

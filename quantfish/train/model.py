"""The Stockfish 15.1 topology in float (PyTorch), so that a trained model quantises into a .nnue file.

HalfKAv2_hm (22528 features per perspective, one feature transformer shared by both) -> L1 accumulator plus
8 PSQT values -> clamp [0, 1] -> pairwise product of the halves (* 127/128) -> 8 layer stacks chosen by
bucket = (pieces - 1) // 4: fc_0 (16 outputs; 15 go through SqrClippedReLU and ClippedReLU into fc_1, the
16th is the skip connection), fc_1 (32) -> ClippedReLU -> fc_2 (1). Output = fc_2 + fc0[15] + (psqt_us -
psqt_them) / 2, times 600: Stockfish's internal units of ``(psqt + positional) / 16``. Every clamp and factor
is the float image of the integer arithmetic under the scales of ``quantfish.nnue.scales``; with dequantised
weights this is the float counterpart of the engine's forward pass (the engine floors where this does not).

The FT weights and the PSQT weights share one embedding table (L1 + 8 columns, one sparse sum for both);
row 22528 is the padding row that index -1 maps to (excluded from the sum).

The factoriser (``factoriser=True``, the guide's HalfKAv2_hm^): 704 more rows, one for each (piece, square)
whatever the king's square, added to every real feature of that piece and square. Each virtual row learns from
all 32 king buckets' positions at once, so what is common to them is learnt from 32 times the data; at export
the virtual rows are folded into the real ones (``fold_factoriser``) and the net is the plain topology. The
virtual rows start at zero, so a factorised model starts as the same function as an unfactorised one. On the CPU that sum, the clamp,
the pairwise product and their gradients run as Numba kernels (``quantfish.train.ftkernel``), and so do the
layer stacks when their activations are not floored (``quantfish.train.stackkernel``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from quantfish.nnue.architecture import FC0_OUT, FC1_OUT, LAYER_STACKS, NUM_FEATURES, PS_NB, PSQT_BUCKETS
from quantfish.nnue import scales
from quantfish.train.ftkernel import as_tensor, clip_table, feature_transform, runs_here
from quantfish.train import stackkernel
from quantfish.train.stackkernel import FC1_IN, N_HIDDEN

SUPPORTED_L1 = (128, 256, 512, 1024)
# Quantisation-aware training: "ste" rounds the weights to the format's grid (straight-through); "dorefa"
# trains tanh-normalised dense weights and also floors the activations to their int8 steps; "pact" learns
# the clip of the FT and fc_1 activations (folded into the weights at export) and floors the activations;
# "wrpn" clips the weights to their range and floors the activations, with ``qat_bits`` below 8 for a
# coarser weight grid (WRPN's reduced precision; its wider layers are ``l1``).
QAT_METHODS = ("ste", "dorefa", "pact", "wrpn")
PAD = NUM_FEATURES              # embedding row of the padding index
VIRTUAL = NUM_FEATURES + 1      # first row of the factoriser's virtual features (PS_NB of them)


def fold_factoriser(table):
    """The real rows of an embedding table with the factoriser's virtual rows added to them (a tensor or
    numpy array of NUM_FEATURES + 1 + PS_NB rows; a table without virtual rows is returned as it is)."""
    if table.shape[0] <= VIRTUAL:
        return table
    real = table[:VIRTUAL]
    virtual = table[VIRTUAL:VIRTUAL + PS_NB]
    folded = real.clone() if hasattr(real, "clone") else real.copy()
    for b in range(NUM_FEATURES // PS_NB):
        folded[b * PS_NB:(b + 1) * PS_NB] += virtual
    return folded

# Middle-game piece values of Stockfish 15.1 (types.h), internal units: the PSQT starts as plain material.
_PIECE_VALUES = (126, 781, 825, 1276, 2538)   # pawn .. queen


def _fake_quant(w: torch.Tensor, scale, bits: int = 8) -> torch.Tensor:
    """Round to the integer grid in the forward pass (below 8 bits, to the ``bits``-bit grid of
    ``_on_grid``), identity gradient (straight-through estimator)."""
    if bits < 8:
        return w + (_on_grid(w.detach(), scale, bits) - w).detach()
    unit = 1.0 / scale
    return w + (torch.round(w / unit) * unit - w).detach()


def _weight_step(bits: int) -> int:
    """Integers between neighbouring values of a ``bits``-bit symmetric weight grid laid on int8's [-127, 127]:
    2^(bits-1) - 1 levels a side (WRPN's sign bit and magnitude bits), rounded to whole integers so that the
    grid is exactly the format's (8 bits: every integer; 6 bits: every 4th)."""
    return max(1, round(127 / (2 ** (bits - 1) - 1)))


def _on_grid(w: torch.Tensor, scale: float, bits: int) -> torch.Tensor:
    """``w`` rounded to the ``bits``-bit grid of integers (multiples of ``_weight_step``, at most
    2^(bits-1) - 1 of them a side), in float units."""
    step, levels = _weight_step(bits), 2 ** (bits - 1) - 1
    return torch.clamp(torch.round(w * scale / step), -levels, levels) * step / scale


def _dorefa(w: torch.Tensor, q) -> torch.Tensor:
    """DoReFa's weight transform onto the whole range of the int8 tensor ``q``: tanh, normalised by the
    tensor's largest |tanh|, so its largest weight sits at +-127 / scale (its quantize_k is the rounding of
    ``_params``)."""
    t = torch.tanh(w)
    return t / t.abs().max().clamp_min(1e-12) * q.clip_range[1]


class NnueModel(nn.Module):
    """Float HalfKAv2_hm net of width ``l1``; ``forward`` returns internal units (side to move's view)."""

    def __init__(self, l1: int = 256, seed: int | None = 0, factoriser: bool = False, qat: str = "ste",
                 qat_bits: int = 8):
        super().__init__()
        if l1 <= 0 or l1 % 32:
            raise ValueError(f"L1 must be a positive multiple of 32 (tested: {SUPPORTED_L1}), got {l1}")
        if qat not in QAT_METHODS:
            raise ValueError(f"unknown quantisation-aware training method {qat!r} ({', '.join(QAT_METHODS)})")
        if not 2 <= qat_bits <= 8:
            raise ValueError(f"QAT weight bits must be 2..8 (the format's dense weights are int8), got {qat_bits}")
        self.l1 = l1
        self.factoriser = factoriser
        self.qat = qat
        self.qat_bits = qat_bits
        self.fake_quant = False
        self._folded = None     # the factorised table's folded form, left by the last clip (``ftkernel.FoldedTable``)
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        s = LAYER_STACKS
        # FT and PSQT: one table of L1 + 8 columns; FT columns scale 127, PSQT columns scale 9600.
        rows = NUM_FEATURES + 1 + (PS_NB if factoriser else 0)
        self.ft_weight = nn.Parameter(torch.empty(rows, l1 + PSQT_BUCKETS))
        self.ft_bias = nn.Parameter(torch.empty(l1))
        self.w0 = nn.Parameter(torch.empty(s * FC0_OUT, l1))
        self.b0 = nn.Parameter(torch.empty(s * FC0_OUT))
        self.w1 = nn.Parameter(torch.empty(s * FC1_OUT, FC1_IN))
        self.b1 = nn.Parameter(torch.empty(s * FC1_OUT))
        self.w2 = nn.Parameter(torch.empty(s, FC1_OUT))
        self.b2 = nn.Parameter(torch.empty(s))
        if qat == "pact":       # learned clips: the FT's (one) and fc_1's (one per layer stack)
            self.pact_ft = nn.Parameter(torch.ones(()))
            self.pact_fc1 = nn.Parameter(torch.ones(s))
        self._init_weights(gen)
        col = torch.full((l1 + PSQT_BUCKETS,), scales.FT_SCALE)
        col[l1:] = scales.OUTPUT_BIAS_SCALE
        self.register_buffer("_ft_col_scale", col, persistent=False)

    # ------------------------------------------------------------------------------------------------
    def _init_weights(self, gen) -> None:
        """Small random FT around a bias of 0.5 (so the pairwise products start alive), material PSQT, and
        identical layer stacks (every bucket starts from the same function and specialises with its data)."""
        with torch.no_grad():
            l1 = self.l1
            self.ft_weight.normal_(0.0, 0.05, generator=gen)
            self.ft_weight[:, l1:] = 0.0
            self.ft_weight[PAD:] = 0.0          # the padding row, and the factoriser's rows when there are any
            self.ft_bias.fill_(0.5)
            planes = torch.arange(NUM_FEATURES) % PS_NB // 64      # 0..10: own P, enemy P, own N, ...
            for p in range(10):
                value = _PIECE_VALUES[p // 2] / scales.NNUE2SCORE
                self.ft_weight[:NUM_FEATURES, l1:][planes == p] = value if p % 2 == 0 else -value
            for w, b, fan_in in ((self.w0, self.b0, l1), (self.w1, self.b1, FC1_IN), (self.w2, self.b2, FC1_OUT)):
                bound = 1.0 / fan_in ** 0.5
                rows = w.shape[0] // LAYER_STACKS
                w[:rows].uniform_(-bound, bound, generator=gen)
                b[:rows].uniform_(-bound, bound, generator=gen)
                w.copy_(w[:rows].repeat(LAYER_STACKS, 1))
                b.copy_(b[:rows].repeat(LAYER_STACKS))
            self.w2.mul_(0.5)
            self.b2.zero_()
        self.clip_weights()

    # ------------------------------------------------------------------------------------------------
    def effective(self):
        """The parameters in the form the exported net holds them (float; not yet rounded): DoReFa's weights
        are the tanh-normalised image of the latent ones, PACT's clips are folded into the layers around them
        (clamp(z, 0, a) = a * clamp(z / a, 0, 1): the layer before divided by a, the one after multiplied)."""
        ftw, ftb, w0, b0, w1, b1, w2, b2 = (self.ft_weight, self.ft_bias, self.w0, self.b0, self.w1, self.b1,
                                            self.w2, self.b2)
        if self.qat == "dorefa":
            w0, w1, w2 = (_dorefa(w, q) for w, q in ((w0, scales.W0), (w1, scales.W1), (w2, scales.W2)))
        elif self.qat == "pact":
            a = self.pact_ft
            l1 = self.l1
            ftw = torch.cat([ftw[:, :l1] / a, ftw[:, l1:]], 1)
            ftb = ftb / a
            w0 = w0 * (a * a)           # the pairwise product of two clipped halves carries a^2
            a1 = self.pact_fc1.repeat_interleave(FC1_OUT)
            w1, b1 = w1 / a1.unsqueeze(1), b1 / a1
            w2 = w2 * self.pact_fc1.unsqueeze(1)
        return ftw, ftb, w0, b0, w1, b1, w2, b2

    def exported(self):
        """``effective()`` with the dense weights put on their coarser grid when ``qat_bits`` < 8 (DoReFa,
        WRPN): what the export then rounds to integers."""
        ftw, ftb, w0, b0, w1, b1, w2, b2 = self.effective()
        if self.qat in ("dorefa", "wrpn") and self.qat_bits < 8:
            w0, w1, w2 = (_on_grid(w, q.scale, self.qat_bits)
                          for w, q in ((w0, scales.W0), (w1, scales.W1), (w2, scales.W2)))
        return ftw, ftb, w0, b0, w1, b1, w2, b2

    def _params(self):
        """Parameters as the forward pass uses them: rounded to the integer grid when fake quantisation is on
        (the dense layers' weights to a coarser grid of ``qat_bits`` bits under DoReFa and WRPN)."""
        ftw, ftb, w0, b0, w1, b1, w2, b2 = self.effective()
        if not self.fake_quant:
            return ftw, ftb, w0, b0, w1, b1, w2, b2
        bits = self.qat_bits if self.qat in ("dorefa", "wrpn") else 8
        return (_fake_quant(ftw, self._ft_col_scale), _fake_quant(ftb, scales.FT_SCALE),
                _fake_quant(w0, scales.W0.scale, bits), _fake_quant(b0, scales.B0.scale),
                _fake_quant(w1, scales.W1.scale, bits), _fake_quant(b1, scales.B1.scale),
                _fake_quant(w2, scales.W2.scale, bits), _fake_quant(b2, scales.B2.scale))

    def _floors(self) -> bool:
        return self.fake_quant and self.qat != "ste"

    def _act(self, y: torch.Tensor) -> torch.Tensor:
        """An activation in [0, 1] as the engine holds it (DoReFa, PACT and WRPN in the fake-quantised epochs):
        floored to the 127 steps of its int8, straight-through gradient; the identity otherwise. The exact
        value times 127 is a multiple of 1/128 (FT products) or 1/64 (shifted sums), so 1/256 added before the
        floor absorbs float32's error and nothing else."""
        if not self._floors():
            return y
        return y + (torch.floor(y * 127.0 + 1.0 / 256) / 127.0 - y).detach()

    def _sqr(self, h: torch.Tensor) -> torch.Tensor:
        """SqrClippedReLU: min(h^2 * 127/128, 1); with floors, computed as the engine does from fc_0's integer
        output q = h * 8128: floor(q^2 / 2^19) / 127 (float64: q^2 exceeds float32's exact integers)."""
        sqr = torch.clamp(h * h * scales.SQR_FACTOR, max=1.0)
        if not self._floors():
            return sqr
        q = torch.round(h.detach().double() * scales.HIDDEN_BIAS_SCALE)
        exact = torch.clamp(torch.floor(q * q / 2.0 ** 19), max=127.0) / 127.0
        return sqr + (exact.float() - sqr).detach()

    def forward(self, white_idx, black_idx, stm, bucket) -> torch.Tensor:
        """Evaluation in internal units, side to move's view, of each position of the batch.

        ``white_idx``/``black_idx``: int[n, 32] HalfKAv2_hm indices of each perspective, -1 padding;
        ``stm``: [n] 0 White / 1 Black to move; ``bucket``: [n] layer stack and PSQT bucket (numpy or torch).
        """
        dev = self.ft_bias.device
        bucket = as_tensor(bucket, dev, torch.int64)
        if bucket.shape[0] == 0:
            return torch.zeros(0, device=dev)
        # Positions sorted by bucket, so each layer stack runs on one contiguous slice (8x less work than
        # running all 8 stacks on every position); the outputs are put back in input order at the end.
        order = torch.argsort(bucket, stable=True)
        counts = torch.bincount(bucket, minlength=LAYER_STACKS).tolist()
        if len(counts) > LAYER_STACKS:
            raise ValueError(f"bucket out of range 0..{LAYER_STACKS - 1}: {int(bucket.max())}")
        bucket = bucket[order]
        ftw, ftb, w0, b0, w1, b1, w2, b2 = self._params()
        l1 = self.l1
        # The feature transform picks each position's rows by the side to move, in bucket order; with the
        # factoriser each real feature also activates its (piece, square) row.
        x, psqt_all = feature_transform(white_idx, black_idx, stm, order, ftw, ftb, l1, PAD,
                                        VIRTUAL if self.factoriser else 0,
                                        self._folded if ftw is self.ft_weight else None)
        x = self._act(x)
        psqt = psqt_all.gather(1, bucket.unsqueeze(1)).squeeze(1)

        if not self._floors() and all(runs_here(t) for t in (x, w0, b0, w1, b1, w2, b2)):
            stacks = stackkernel.layer_stacks(x, bucket, w0, b0, w1, b1, w2, b2)     # all 8 in one kernel
        else:
            stacks = torch.cat([self._stack(s, xs, w0, b0, w1, b1, w2, b2)
                                for s, xs in enumerate(torch.split(x, counts)) if xs.shape[0]])
        out_sorted = (stacks + psqt) * scales.NNUE2SCORE
        back = torch.empty_like(order)
        back[order] = torch.arange(len(order), device=dev)
        return out_sorted[back]

    def _stack(self, s: int, x, w0, b0, w1, b1, w2, b2) -> torch.Tensor:
        """Layer stack ``s`` on its positions: fc_2 output plus the skip connection fc0[15] (float units). The
        PyTorch form: on a GPU, and with floored activations (``stackkernel`` computes the rest on the CPU)."""
        r0, r1 = slice(s * FC0_OUT, (s + 1) * FC0_OUT), slice(s * FC1_OUT, (s + 1) * FC1_OUT)
        fc0 = F.linear(x, w0[r0], b0[r0])                                                 # [m, 16]
        h = fc0[:, :N_HIDDEN]
        l1in = torch.cat([self._sqr(h), self._act(torch.clamp(h, 0.0, 1.0))], 1)
        cr1 = self._act(torch.clamp(F.linear(l1in, w1[r1], b1[r1]), 0.0, 1.0))           # [m, 32]
        return cr1 @ w2[s] + b2[s] + fc0[:, N_HIDDEN]

    # ------------------------------------------------------------------------------------------------
    @torch.no_grad()
    def clip_weights(self) -> None:
        """Keep every parameter inside the range its integer type can hold (call after each optimiser step).

        int8 weights use nnue-pytorch's symmetric +-127 / scale; the rest their type's range. The padding row
        of the embedding table stays zero.
        """
        l1 = self.l1
        ft_lo, ft_hi = scales.FT_WEIGHTS.clip_range
        ps_lo, ps_hi = scales.FT_PSQT.clip_range
        if runs_here(self.ft_weight) and self.ft_weight.is_contiguous():
            self._folded = clip_table(self.ft_weight, l1, (ft_lo, ft_hi), (ps_lo, ps_hi), PAD,
                                      VIRTUAL if self.factoriser else 0)
        else:
            self._folded = None
            self._clip_table_torch(ft_lo, ft_hi, ps_lo, ps_hi)
        dense = ((self.w0, scales.W0), (self.w1, scales.W1), (self.w2, scales.W2))
        biases = ((self.ft_bias, scales.FT_BIAS), (self.b0, scales.B0), (self.b1, scales.B1), (self.b2, scales.B2))
        if self.qat == "dorefa":        # tanh bounds the exported weights: the latent ones need no clip
            dense = ()
        elif self.qat == "pact":
            self._clip_pact()
            dense = ()
        for p, q in dense + biases:
            p.clamp_(*q.clip_range)

    def weights_overwritten(self) -> None:
        """The parameters were written where PyTorch does not count in-place changes (a collective's broadcast):
        drop what the clip derived from them."""
        self._folded = None

    @torch.no_grad()
    def _clip_table_torch(self, ft_lo, ft_hi, ps_lo, ps_hi) -> None:
        """The embedding table's clip in PyTorch operations (a GPU's table; on the CPU a compiled kernel does
        the same, ``ftkernel.clip_table``)."""
        l1 = self.l1
        w = self.ft_weight
        w[:, :l1].clamp_(ft_lo, ft_hi)
        w[:, l1:].clamp_(ps_lo, ps_hi)
        w[PAD].zero_()
        if self.factoriser:
            # What the export will hold is real + virtual: keep that sum in range by moving the real rows.
            virtual = w[VIRTUAL:].repeat(NUM_FEATURES // PS_NB, 1)
            lo = torch.tensor([ft_lo] * l1 + [ps_lo] * PSQT_BUCKETS, dtype=w.dtype, device=w.device)
            hi = torch.tensor([ft_hi] * l1 + [ps_hi] * PSQT_BUCKETS, dtype=w.dtype, device=w.device)
            w[:NUM_FEATURES] = torch.minimum(torch.maximum(w[:NUM_FEATURES] + virtual, lo), hi) - virtual

    @torch.no_grad()
    def _clip_pact(self) -> None:
        """PACT: clips stay in [1/4, 2], and each weight is kept so that its folded value fits its type."""
        self.pact_ft.clamp_(0.25, 2.0)
        self.pact_fc1.clamp_(0.25, 2.0)
        a, a1 = float(self.pact_ft), self.pact_fc1
        l1 = self.l1
        ft_hi = scales.FT_WEIGHTS.clip_range[1]
        self.ft_weight[:, :l1].clamp_(-ft_hi * a, ft_hi * a)
        self.ft_bias.clamp_(-scales.FT_BIAS.clip_range[1] * a, scales.FT_BIAS.clip_range[1] * a)
        self.w0.clamp_(-scales.W0.clip_range[1] / (a * a), scales.W0.clip_range[1] / (a * a))
        rows = a1.repeat_interleave(FC1_OUT).unsqueeze(1)
        self.w1.copy_(torch.minimum(torch.maximum(self.w1, -scales.W1.clip_range[1] * rows),
                                    scales.W1.clip_range[1] * rows))
        hi2 = (scales.W2.clip_range[1] / a1).unsqueeze(1)
        self.w2.copy_(torch.minimum(torch.maximum(self.w2, -hi2), hi2))

    @torch.no_grad()
    def widen_from(self, narrow: "NnueModel") -> None:
        """Start as the function of a narrower unfactorised model (Net2Net's wider net): its neuron pairs
        (j, j + L1/2) become this model's pairs (j, j + self.l1/2), and fc_0 reads their products where it read
        them before. The other pairs keep their random feature weights and get zero fc_0 columns, so they add
        nothing until training gives them a use: a wider net continues from a trained narrower one."""
        if narrow.l1 > self.l1 or narrow.factoriser:
            raise ValueError(f"cannot widen L1 = {narrow.l1} into L1 = {self.l1}: the model to widen must be "
                             f"unfactorised and no wider")
        old_half, half = narrow.l1 // 2, self.l1 // 2
        cols = torch.cat([torch.arange(old_half), torch.arange(half, half + old_half)])
        # The feature transform's columns are [first halves, second halves] and fc_0's inputs [side to move's
        # products, the other side's]: the same map takes both from the narrow layout to the wide one.
        self.ft_weight[:VIRTUAL, cols] = narrow.ft_weight[:VIRTUAL, :narrow.l1]
        self.ft_weight[:VIRTUAL, self.l1:] = narrow.ft_weight[:VIRTUAL, narrow.l1:]
        self.ft_weight[VIRTUAL:] = 0.0
        self.ft_bias[cols] = narrow.ft_bias
        self.w0.zero_()
        self.w0[:, cols] = narrow.w0
        for mine, theirs in ((self.b0, narrow.b0), (self.w1, narrow.w1), (self.b1, narrow.b1),
                             (self.w2, narrow.w2), (self.b2, narrow.b2)):
            mine.copy_(theirs)
        self._folded = None

    def folded(self) -> "NnueModel":
        """The same function without the factoriser: its virtual rows added into the real ones."""
        if not self.factoriser:
            return self
        plain = NnueModel(self.l1, seed=None, qat=self.qat, qat_bits=self.qat_bits)
        with torch.no_grad():
            state = {k: v.detach().clone() for k, v in self.state_dict().items()}
            state["ft_weight"] = fold_factoriser(state["ft_weight"])
            plain.load_state_dict(state)
        plain.fake_quant = self.fake_quant
        return plain

    def describe(self) -> str:
        qat = "" if self.qat == "ste" else f", {self.qat} QAT ({self.qat_bits}-bit dense weights)"
        return (f"HalfKAv2_hm{'^' if self.factoriser else ''}[{NUM_FEATURES}]x2 -> {self.l1} -> {FC0_OUT} -> "
                f"{FC1_OUT} -> 1, {LAYER_STACKS} buckets (float model{qat})")


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
the pairwise product and their gradients run as Numba kernels (``quantfish.train.ftkernel``).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from quantfish.nnue.architecture import FC0_OUT, FC1_OUT, LAYER_STACKS, NUM_FEATURES, PS_NB, PSQT_BUCKETS
from quantfish.nnue import scales
from quantfish.train.ftkernel import feature_transform

SUPPORTED_L1 = (128, 256, 512, 1024)
N_HIDDEN = FC0_OUT - 1          # fc_0 outputs that feed fc_1
FC1_IN = 2 * N_HIDDEN           # 15 squared + 15 clipped
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


def _as_tensor(a, dtype, device) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        return a.to(device=device, dtype=dtype)
    return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)


def _fake_quant(w: torch.Tensor, scale) -> torch.Tensor:
    """Round to the integer grid in the forward pass, identity gradient (straight-through estimator)."""
    return w + (torch.round(w * scale) / scale - w).detach()


class NnueModel(nn.Module):
    """Float HalfKAv2_hm net of width ``l1``; ``forward`` returns internal units (side to move's view)."""

    def __init__(self, l1: int = 256, seed: int | None = 0, factoriser: bool = False):
        super().__init__()
        if l1 <= 0 or l1 % 32:
            raise ValueError(f"L1 must be a positive multiple of 32 (tested: {SUPPORTED_L1}), got {l1}")
        self.l1 = l1
        self.factoriser = factoriser
        self.fake_quant = False
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
    def _params(self):
        """Parameters as the forward pass uses them: rounded to the integer grid when fake quantisation is on."""
        if not self.fake_quant:
            return self.ft_weight, self.ft_bias, self.w0, self.b0, self.w1, self.b1, self.w2, self.b2
        return (_fake_quant(self.ft_weight, self._ft_col_scale), _fake_quant(self.ft_bias, scales.FT_SCALE),
                _fake_quant(self.w0, scales.W0.scale), _fake_quant(self.b0, scales.B0.scale),
                _fake_quant(self.w1, scales.W1.scale), _fake_quant(self.b1, scales.B1.scale),
                _fake_quant(self.w2, scales.W2.scale), _fake_quant(self.b2, scales.B2.scale))

    def forward(self, white_idx, black_idx, stm, bucket) -> torch.Tensor:
        """Evaluation in internal units, side to move's view, of each position of the batch.

        ``white_idx``/``black_idx``: int[n, 32] HalfKAv2_hm indices of each perspective, -1 padding;
        ``stm``: [n] 0 White / 1 Black to move; ``bucket``: [n] layer stack and PSQT bucket (numpy or torch).
        """
        dev = self.ft_bias.device
        bucket = _as_tensor(bucket, torch.int64, dev)
        if bucket.shape[0] == 0:
            return torch.zeros(0, device=dev)
        # Positions sorted by bucket, so each layer stack runs on one contiguous slice (8x less work than
        # running all 8 stacks on every position); the outputs are put back in input order at the end.
        order = torch.argsort(bucket, stable=True)
        counts = torch.bincount(bucket, minlength=LAYER_STACKS).tolist()
        if len(counts) > LAYER_STACKS:
            raise ValueError(f"bucket out of range 0..{LAYER_STACKS - 1}: {int(bucket.max())}")
        wi = _as_tensor(white_idx, torch.int64, dev)[order]
        bi = _as_tensor(black_idx, torch.int64, dev)[order]
        stm = _as_tensor(stm, torch.int64, dev)[order]
        bucket = bucket[order]
        ftw, ftb, w0, b0, w1, b1, w2, b2 = self._params()
        l1 = self.l1

        if self.factoriser:         # each real feature also activates its (piece, square) row
            wi = torch.cat([wi, torch.where(wi >= 0, VIRTUAL + wi % PS_NB, -1)], 1)
            bi = torch.cat([bi, torch.where(bi >= 0, VIRTUAL + bi % PS_NB, -1)], 1)
        white_to_move = (stm == 0).unsqueeze(1)
        x, psqt_all = feature_transform(torch.where(white_to_move, wi, bi), torch.where(white_to_move, bi, wi),
                                        ftw, ftb, l1, PAD)
        psqt = psqt_all.gather(1, bucket.unsqueeze(1)).squeeze(1)

        parts = []
        for s, xs in enumerate(torch.split(x, counts)):
            if xs.shape[0]:
                parts.append(self._stack(s, xs, w0, b0, w1, b1, w2, b2))
        out_sorted = (torch.cat(parts) + psqt) * scales.NNUE2SCORE
        return out_sorted[torch.argsort(order)]

    @staticmethod
    def _stack(s: int, x, w0, b0, w1, b1, w2, b2) -> torch.Tensor:
        """Layer stack ``s`` on its positions: fc_2 output plus the skip connection fc0[15] (float units)."""
        r0, r1 = slice(s * FC0_OUT, (s + 1) * FC0_OUT), slice(s * FC1_OUT, (s + 1) * FC1_OUT)
        fc0 = F.linear(x, w0[r0], b0[r0])                                                 # [m, 16]
        h = fc0[:, :N_HIDDEN]
        l1in = torch.cat([torch.clamp(h * h * scales.SQR_FACTOR, max=1.0), torch.clamp(h, 0.0, 1.0)], 1)
        cr1 = torch.clamp(F.linear(l1in, w1[r1], b1[r1]), 0.0, 1.0)                       # [m, 32]
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
        self.ft_weight[:, :l1].clamp_(ft_lo, ft_hi)
        self.ft_weight[:, l1:].clamp_(ps_lo, ps_hi)
        self.ft_weight[PAD].zero_()
        if self.factoriser:
            # What the export will hold is real + virtual: keep that sum in range by moving the real rows.
            w = self.ft_weight
            virtual = w[VIRTUAL:].repeat(NUM_FEATURES // PS_NB, 1)
            lo = torch.tensor([ft_lo] * l1 + [ps_lo] * PSQT_BUCKETS, dtype=w.dtype, device=w.device)
            hi = torch.tensor([ft_hi] * l1 + [ps_hi] * PSQT_BUCKETS, dtype=w.dtype, device=w.device)
            w[:NUM_FEATURES] = torch.minimum(torch.maximum(w[:NUM_FEATURES] + virtual, lo), hi) - virtual
        for p, q in ((self.ft_bias, scales.FT_BIAS), (self.w0, scales.W0), (self.b0, scales.B0),
                     (self.w1, scales.W1), (self.b1, scales.B1), (self.w2, scales.W2), (self.b2, scales.B2)):
            p.clamp_(*q.clip_range)

    def folded(self) -> "NnueModel":
        """The same function without the factoriser: its virtual rows added into the real ones."""
        if not self.factoriser:
            return self
        plain = NnueModel(self.l1, seed=None)
        with torch.no_grad():
            state = {k: v.detach().clone() for k, v in self.state_dict().items()}
            state["ft_weight"] = fold_factoriser(state["ft_weight"])
            plain.load_state_dict(state)
        plain.fake_quant = self.fake_quant
        return plain

    def describe(self) -> str:
        return (f"HalfKAv2_hm{'^' if self.factoriser else ''}[{NUM_FEATURES}]x2 -> {self.l1} -> {FC0_OUT} -> "
                f"{FC1_OUT} -> 1, {LAYER_STACKS} buckets (float model)")


"""A float net as plain numpy arrays, and its float64 forward pass: the function every scheme approximates.

The forward pass is the trainer's model (``quantfish.train.model.NnueModel``) in numpy: accumulator = bias + the
active rows; clamp [0, 1]; pairwise product of the halves times 127/128; per layer stack fc_0 (16 outputs),
SqrClippedReLU ``min(h^2 * 127/128, 1)`` and ClippedReLU ``clamp(h, 0, 1)`` of its 15 hidden outputs, fc_1,
ClippedReLU, fc_2; plus the skip fc0[15] and the PSQT ``(us - them) / 2``; times 600. The result is in
Stockfish's internal units, comparable to ``nnue_raw`` (``(psqt + positional) / 16``). Nothing is rounded:
the 127/128 factors are part of the function the trainer learns (quantfish.nnue.scales), not of a quantisation.

Constructors: ``from_net`` (a Stockfish ``Net`` divided by nnue-pytorch's fixed scales: FT 127, hidden
weights 64, biases 127 * 64, output weights 600 * 16 / 127, output bias and PSQT 9600) and
``from_checkpoint`` (a training checkpoint, Quantfish's or nnue-pytorch's; the only place torch is
imported).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from quantfish.nnue.architecture import FC0_OUT, FC1_IN, FC1_OUT, LAYER_STACKS, N_HIDDEN, NUM_FEATURES
from quantfish.nnue.net import Net
from quantfish.nnue import scales

SKIP = FC0_OUT - 1               # fc_0's last output is the skip connection
PAIRWISE = scales.PAIRWISE_FACTOR
SQR = scales.SQR_FACTOR
NNUE2SCORE = scales.NNUE2SCORE   # float 1.0 = 600 internal units

TORCH_MISSING = "reading a training checkpoint needs PyTorch (make train-deps); a .nnue file needs no torch"


@dataclass(eq=False)
class FloatNet:
    """Float parameters, unpadded, in the trainer's float units."""

    ft_bias: np.ndarray       # [L1]
    ft_weights: np.ndarray    # [features, L1]
    ft_psqt: np.ndarray       # [features, 8]
    w0: np.ndarray            # [stacks, 16, L1]
    b0: np.ndarray            # [stacks, 16]
    w1: np.ndarray            # [stacks, 32, 30]
    b1: np.ndarray            # [stacks, 32]
    w2: np.ndarray            # [stacks, 32]
    b2: np.ndarray            # [stacks]
    description: bytes = b""
    source: str = ""

    @property
    def l1(self) -> int:
        return self.ft_bias.shape[0]

    @property
    def stacks(self) -> int:
        return self.b2.shape[0]

    # -----------------------------------------------------------------------------------------------
    @classmethod
    def from_net(cls, net: Net) -> "FloatNet":
        """Stockfish's integers divided by the fixed scales (exact inverses of ``schemes.sf``)."""
        net.arch.require_fixed_scales(net.path or "net")
        l1 = net.arch.l1
        f = lambda a, q: np.asarray(a, np.float64) / q.scale
        return cls(ft_bias=f(net.ft_bias, scales.FT_BIAS), ft_weights=f(net.ft_weights, scales.FT_WEIGHTS),
                   ft_psqt=f(net.ft_psqt, scales.FT_PSQT), w0=f(net.w0[:, :, :l1], scales.W0),
                   b0=f(net.b0, scales.B0), w1=f(net.w1[:, :, :FC1_IN], scales.W1), b1=f(net.b1, scales.B1),
                   w2=f(net.w2[:, :FC1_OUT], scales.W2), b2=f(net.b2, scales.B2),
                   description=bytes(net.description), source=net.path)

    @classmethod
    def from_checkpoint(cls, path) -> "FloatNet":
        """The model tensors of a training checkpoint, shape checked: Quantfish's trainer's
        (``quantfish.train.checkpoint``) or nnue-pytorch's (``quantfish.quant.nnue_pytorch``)."""
        try:
            import torch  # noqa: F401
        except ImportError:
            raise ImportError(TORCH_MISSING) from None
        from quantfish.quant import nnue_pytorch
        from quantfish.train.checkpoint import FORMAT, check_arch, check_format, read_state
        state = read_state(path)
        foreign = None if isinstance(state, dict) and state.get("format") == FORMAT else \
            nnue_pytorch.find_state_dict(state)
        if foreign is not None:
            tensors = {k: v.detach().cpu().double().numpy() for k, v in foreign.items() if hasattr(v, "detach")}
            return cls(**nnue_pytorch.arrays(tensors, str(path)),
                       description=b"Network trained with nnue-pytorch.", source=str(path))
        if not isinstance(state, dict) or "format" not in state:
            from quantfish.train.checkpoint import CheckpointError
            raise CheckpointError(f"{path}: neither a Quantfish training checkpoint nor an nnue-pytorch state dict "
                                  f"(no input.weight tensor)")
        from quantfish.train.model import fold_factoriser
        state = check_format(state, path)
        arch = state.get("arch", {})
        l1 = int(arch.get("l1", 0))
        check_arch(state, l1, path, bool(arch.get("factoriser", False)))
        m = {k: v.detach().cpu().double().numpy() for k, v in state["model"].items()}
        m["ft_weight"] = fold_factoriser(m["ft_weight"])
        s = LAYER_STACKS
        return cls(ft_bias=m["ft_bias"], ft_weights=m["ft_weight"][:NUM_FEATURES, :l1].copy(),
                   ft_psqt=m["ft_weight"][:NUM_FEATURES, l1:].copy(), w0=m["w0"].reshape(s, FC0_OUT, l1),
                   b0=m["b0"].reshape(s, FC0_OUT), w1=m["w1"].reshape(s, FC1_OUT, FC1_IN),
                   b1=m["b1"].reshape(s, FC1_OUT), w2=m["w2"].reshape(s, FC1_OUT), b2=m["b2"].reshape(s),
                   description=b"Network trained with Quantfish's trainer (nnue/train).", source=str(path))

    # -----------------------------------------------------------------------------------------------
    def forward(self, positions, stack=None, chunk: int = 256, act=None) -> "FloatTrace":
        """Every intermediate of the float forward pass; ``stack`` (default: each position's bucket) chooses
        the layer stack and PSQT bucket of each position. ``act(site, values)``, when given, replaces the
        activations at each site ("ft": the clamped accumulator, "x": fc_0's input, "hidden": the outputs of
        ac_sqr_0, ac_0 and ac_1), for measuring a narrower activation type (``quantfish.quant.bitwidth``)."""
        stack = positions.bucket if stack is None else np.broadcast_to(stack, positions.bucket.shape)
        parts = [self._chunk(positions.white[i:i + chunk], positions.black[i:i + chunk],
                             positions.stm[i:i + chunk], stack[i:i + chunk], act)
                 for i in range(0, len(positions), chunk)]
        return FloatTrace(*(np.concatenate(p) for p in zip(*parts)))

    def _accumulate(self, idx):
        """Accumulator and PSQT sums of padded index rows (-1 padding excluded)."""
        pads = (idx < 0).sum(1)[:, None]
        safe = np.where(idx < 0, 0, idx)              # padding reads row 0, whose copies are taken back out
        acc = self.ft_bias + (self.ft_weights[safe].sum(1) - pads * self.ft_weights[0])
        psqt = self.ft_psqt[safe].sum(1) - pads * self.ft_psqt[0]
        return acc, psqt

    def _chunk(self, white, black, stm, stack, act=None):
        n = len(stm)
        acc_w, ps_w = self._accumulate(white)
        acc_b, ps_b = self._accumulate(black)
        wtm = (stm == 0)[:, None]
        acc = np.concatenate([np.where(wtm, acc_w, acc_b), np.where(wtm, acc_b, acc_w)], 1)   # us, them
        ps_us, ps_them = np.where(wtm, ps_w, ps_b), np.where(wtm, ps_b, ps_w)
        half = self.l1 // 2
        a = np.clip(acc, 0.0, 1.0)
        if act is not None:
            a = act("ft", a)
        x = np.concatenate([a[:, :half] * a[:, half:self.l1], a[:, self.l1:self.l1 + half] * a[:, self.l1 + half:]],
                           1) * PAIRWISE
        if act is not None:
            x = act("x", x)
        rows = np.arange(n)
        psqt = (ps_us[rows, stack] - ps_them[rows, stack]) / 2
        z0 = np.empty((n, FC0_OUT))
        l1in = np.empty((n, FC1_IN))
        z1 = np.empty((n, FC1_OUT))
        c1 = np.empty((n, FC1_OUT))
        z2 = np.empty(n)
        for s in np.unique(stack):
            m = stack == s
            z0[m] = self.b0[s] + x[m] @ self.w0[s].T
            h = z0[m, :N_HIDDEN]
            l1in[m] = np.concatenate([np.minimum(h * h * SQR, 1.0), np.clip(h, 0.0, 1.0)], 1)
            if act is not None:
                l1in[m] = act("hidden", l1in[m])
            z1[m] = self.b1[s] + l1in[m] @ self.w1[s].T
            c1[m] = np.clip(z1[m], 0.0, 1.0)
            if act is not None:
                c1[m] = act("hidden", c1[m])
            z2[m] = self.b2[s] + c1[m] @ self.w2[s]
        out = (z2 + z0[:, SKIP] + psqt) * NNUE2SCORE
        return acc, x, psqt, z0, l1in, z1, c1, z2, out


def load(path) -> FloatNet:
    """The float net of a Stockfish ``.nnue`` file (recognised by its version word) or a training checkpoint."""
    from pathlib import Path

    from quantfish.nnue.architecture import VERSION
    from quantfish.nnue.io import load_net
    with open(path, "rb") as fh:
        head = fh.read(4)
    if len(head) == 4 and int.from_bytes(head, "little") == VERSION:
        return FloatNet.from_net(load_net(path))
    if Path(path).suffix == ".nnue":
        load_net(path)                            # raises the reader's own clear message
    return FloatNet.from_checkpoint(path)


class FloatTrace(NamedTuple):
    """The float forward pass of n positions, each through its own stack (float units unless said)."""

    acc: np.ndarray        # [n, 2 * L1] accumulators, side to move's first
    x: np.ndarray          # [n, L1] pairwise products (fc_0's input)
    psqt: np.ndarray       # [n] (us - them) / 2 of the position's bucket
    z0: np.ndarray         # [n, 16] fc_0 outputs (the last is the skip)
    l1in: np.ndarray       # [n, 30] SqrClippedReLU then ClippedReLU of the 15 hidden fc_0 outputs
    z1: np.ndarray         # [n, 32] fc_1 outputs
    c1: np.ndarray         # [n, 32] their ClippedReLU
    z2: np.ndarray         # [n] fc_2 output
    out: np.ndarray        # [n] internal units: (z2 + z0[15] + psqt) * 600

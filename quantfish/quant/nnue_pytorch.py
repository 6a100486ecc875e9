"""nnue-pytorch checkpoints of Stockfish 15.1's topology, as the float arrays of ``FloatNet``.

nnue-pytorch keeps the net in a state dict (inside a Lightning ``.ckpt`` under ``state_dict``, or alone in a
``.pt``):

    input.weight               [F, L1 + 8]      feature transformer columns, then the 8 PSQT buckets
    input.bias                 [L1 + 8]         (the PSQT biases cancel in us - them and are not used)
    layer_stacks.l1.weight     [8 * 16, L1]     fc_0 of every stack (15 hidden outputs and the skip)
    layer_stacks.l1.bias       [8 * 16]
    layer_stacks.l1_fact.*     [16, L1], [16]   a factoriser shared by the stacks (optional)
    layer_stacks.l2.weight     [8 * 32, 30]     fc_1
    layer_stacks.output.weight [8, 32]          fc_2
    (and their biases)

F is 22528 (HalfKAv2_hm) or 22528 + 704 (HalfKAv2_hm^, whose virtual "A" rows, one per piece-square, are
added to every king bucket's row, as nnue-pytorch's serialiser coalesces them). The float units are the ones
``FloatNet`` uses, nnue-pytorch's own: its serialiser multiplies by the fixed scales that ``schemes.sf`` uses.
Torch is imported by the caller; this module sees numpy arrays only.
"""

from __future__ import annotations

import numpy as np

from quantfish.nnue.architecture import FC0_OUT, FC1_IN, FC1_OUT, LAYER_STACKS, NUM_FEATURES, PS_NB, PSQT_BUCKETS

FACTORISED = NUM_FEATURES + PS_NB
KEYS = ("input.weight", "input.bias", "layer_stacks.l1.weight", "layer_stacks.l1.bias", "layer_stacks.l2.weight",
        "layer_stacks.l2.bias", "layer_stacks.output.weight", "layer_stacks.output.bias")


def find_state_dict(state) -> dict | None:
    """The nnue-pytorch state dict inside a loaded checkpoint (top level or Lightning's ``state_dict``), with
    any common prefix (such as ``model.``) taken off; None when it is not one."""
    for candidate in (state, state.get("state_dict") if isinstance(state, dict) else None):
        if not isinstance(candidate, dict):
            continue
        for key in candidate:
            if isinstance(key, str) and key.endswith("input.weight"):
                prefix = key[:-len("input.weight")]
                return {k[len(prefix):]: v for k, v in candidate.items()
                        if isinstance(k, str) and k.startswith(prefix)}
    return None


def arrays(sd: dict, source: str = "checkpoint") -> dict:
    """``FloatNet``'s fields from a state dict of numpy arrays; ``ValueError`` naming the tensor whose
    shape does not fit."""
    missing = [k for k in KEYS if k not in sd]
    if missing:
        raise ValueError(f"{source}: nnue-pytorch checkpoint lacks {', '.join(missing)}")
    w_in = sd["input.weight"]
    if w_in.ndim != 2 or w_in.shape[0] not in (NUM_FEATURES, FACTORISED) or w_in.shape[1] <= PSQT_BUCKETS:
        raise ValueError(f"{source}: input.weight has shape {tuple(w_in.shape)}, expected ({NUM_FEATURES} or "
                         f"{FACTORISED}, L1 + {PSQT_BUCKETS}) for HalfKAv2_hm")
    l1 = w_in.shape[1] - PSQT_BUCKETS
    s = LAYER_STACKS
    want = {"input.bias": (l1 + PSQT_BUCKETS,), "layer_stacks.l1.weight": (s * FC0_OUT, l1),
            "layer_stacks.l1.bias": (s * FC0_OUT,), "layer_stacks.l1_fact.weight": (FC0_OUT, l1),
            "layer_stacks.l1_fact.bias": (FC0_OUT,), "layer_stacks.l2.weight": (s * FC1_OUT, FC1_IN),
            "layer_stacks.l2.bias": (s * FC1_OUT,), "layer_stacks.output.weight": (s, FC1_OUT),
            "layer_stacks.output.bias": (s,)}
    for key, shape in want.items():
        if key in sd and tuple(sd[key].shape) != shape:
            raise ValueError(f"{source}: {key} has shape {tuple(sd[key].shape)}, expected {shape} "
                             f"(Stockfish 15.1's topology with L1 = {l1})")
    ft = np.asarray(w_in, np.float64)
    if ft.shape[0] == FACTORISED:
        ft = ft[:NUM_FEATURES] + ft[NUM_FEATURES + np.arange(NUM_FEATURES) % PS_NB]
    w0 = np.asarray(sd["layer_stacks.l1.weight"], np.float64).reshape(s, FC0_OUT, l1)
    b0 = np.asarray(sd["layer_stacks.l1.bias"], np.float64).reshape(s, FC0_OUT)
    if "layer_stacks.l1_fact.weight" in sd:
        w0 = w0 + np.asarray(sd["layer_stacks.l1_fact.weight"], np.float64)
    if "layer_stacks.l1_fact.bias" in sd:
        b0 = b0 + np.asarray(sd["layer_stacks.l1_fact.bias"], np.float64)
    return dict(ft_bias=np.asarray(sd["input.bias"], np.float64)[:l1], ft_weights=ft[:, :l1].copy(),
                ft_psqt=ft[:, l1:].copy(), w0=w0, b0=b0,
                w1=np.asarray(sd["layer_stacks.l2.weight"], np.float64).reshape(s, FC1_OUT, FC1_IN),
                b1=np.asarray(sd["layer_stacks.l2.bias"], np.float64).reshape(s, FC1_OUT),
                w2=np.asarray(sd["layer_stacks.output.weight"], np.float64).reshape(s, FC1_OUT),
                b2=np.asarray(sd["layer_stacks.output.bias"], np.float64).reshape(s))

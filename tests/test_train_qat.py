"""Quantisation-aware training (straight-through, DoReFa, PACT, WRPN): each trains, each computes what the
exported integer net computes, and PACT's folded clips are the clips they stand for."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch not installed (make train-deps)")

from quantfish.nnue import scales  # noqa: E402
from quantfish.nnue.architecture import FC0_OUT, FC1_OUT  # noqa: E402
from quantfish.train.checkpoint import CheckpointError  # noqa: E402
from quantfish.train.model import PAD, QAT_METHODS, NnueModel, _weight_step  # noqa: E402
from quantfish.train.quanterror import compare  # noqa: E402
from quantfish.train.quantize import quantise  # noqa: E402
from quantfish.train.trainer import TrainConfig, model_from_checkpoint, train  # noqa: E402
from tests.trainset import distill_set  # noqa: E402

torch.set_num_threads(1)


def _perturbed(method: str, bits: int = 8, seed: int = 5) -> NnueModel:
    """A model away from its initial symmetric state (random dense weights, PACT clips off 1)."""
    model = NnueModel(128, seed=seed, qat=method, qat_bits=bits)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in (model.w0, model.w1, model.w2):
            p.add_(torch.randn(p.shape, generator=gen) * 0.3)
        model.ft_weight[:PAD, :128].add_(torch.randn(PAD, 128, generator=gen) * 0.02)
        if method == "pact":
            model.pact_ft.fill_(0.8)
            model.pact_fc1.copy_(torch.linspace(0.6, 1.3, 8))
    model.clip_weights()
    return model


@pytest.mark.parametrize("method", QAT_METHODS)
def test_each_method_lowers_the_loss(method):
    """Six epochs with the quantised forward pass throughout: the last epoch's loss is well below the first."""
    config = TrainConfig(l1=128, epochs=6, batch_size=32, lr=2e-3, val_fraction=0.0, fake_quant_epochs=6,
                         qat=method, qat_bits=6 if method in ("dorefa", "wrpn") else 8, seed=0, log=None)
    result = train(distill_set(), config)
    first, last = result.history[0]["train_loss"], result.history[-1]["train_loss"]
    assert last < 0.8 * first, (method, first, last)


@pytest.mark.parametrize("method,bits", [("dorefa", 8), ("dorefa", 5), ("pact", 8), ("wrpn", 8), ("wrpn", 4)])
def test_quantised_forward_is_the_exported_nets_integer_evaluation(method, bits):
    """With its activations floored as the engine floors them, the fake-quantised model is the integer net:
    the exported net's engine evaluation within float32 rounding (internal units)."""
    arr = distill_set()
    model = _perturbed(method, bits)
    model.fake_quant = True
    args = (arr.white_idx[:300], arr.black_idx[:300], arr.stm[:300], arr.bucket[:300])
    with torch.no_grad():
        fq = model(*args).double().numpy()
    net = quantise(model)
    engine = compare(net, *args).integer
    assert np.abs(fq - engine).max() <= 1.5, np.abs(fq - engine).max()
    if bits < 8:        # the coarser grid: every dense weight a multiple of the step
        step = _weight_step(bits)
        for w in (net.w0, net.w1, net.w2):
            assert np.all(np.asarray(w) % step == 0)


def test_straight_through_leaves_activations_unfloored():
    """The plain method rounds weights only, so it is further from the engine than the others."""
    arr = distill_set()
    args = (arr.white_idx[:300], arr.black_idx[:300], arr.stm[:300], arr.bucket[:300])
    model = _perturbed("ste")
    model.fake_quant = True
    with torch.no_grad():
        fq = model(*args).double().numpy()
    assert np.abs(fq - compare(quantise(model), *args).integer).max() > 1.5


def test_dorefa_weights_fill_the_int8_range():
    net = quantise(_perturbed("dorefa"))
    for w in (net.w0, net.w1, net.w2):
        assert np.abs(np.asarray(w)).max() == 127


def test_pact_clips_are_the_clips_they_stand_for():
    """The folded forward pass equals the unfolded definition: clamp(acc, 0, a_ft) for the FT and
    clamp(fc_1, 0, a_fc1[stack]) for fc_1, with the latent weights (float64, numpy)."""
    arr = distill_set()
    n = 50
    model = _perturbed("pact")
    with torch.no_grad():
        out = model(arr.white_idx[:n], arr.black_idx[:n], arr.stm[:n], arr.bucket[:n]).double().numpy()
    g = lambda t: t.detach().double().numpy()
    ftw, ftb, w0, b0, w1, b1, w2, b2 = (g(t) for t in (model.ft_weight, model.ft_bias, model.w0, model.b0,
                                                        model.w1, model.b1, model.w2, model.b2))
    a_ft, a_fc1 = float(model.pact_ft.detach()), g(model.pact_fc1)
    half = 64
    for i in range(n):
        rows = []
        for idx in (arr.white_idx[i], arr.black_idx[i]):
            rows.append(ftw[[f for f in idx if f >= 0]].sum(0))
        us, them = (rows[0], rows[1]) if arr.stm[i] == 0 else (rows[1], rows[0])
        x = []
        for acc in (us, them):
            u = np.clip(acc[:128] + ftb, 0.0, a_ft)
            x.append(u[:half] * u[half:] * scales.PAIRWISE_FACTOR)
        x = np.concatenate(x)
        s = int(arr.bucket[i])
        fc0 = w0[s * FC0_OUT:(s + 1) * FC0_OUT] @ x + b0[s * FC0_OUT:(s + 1) * FC0_OUT]
        h = fc0[:FC0_OUT - 1]
        l1in = np.concatenate([np.minimum(h * h * scales.SQR_FACTOR, 1.0), np.clip(h, 0.0, 1.0)])
        z = w1[s * FC1_OUT:(s + 1) * FC1_OUT] @ l1in + b1[s * FC1_OUT:(s + 1) * FC1_OUT]
        cr1 = np.clip(z, 0.0, a_fc1[s])
        psqt = (us[128 + s] - them[128 + s]) / 2
        want = (cr1 @ w2[s] + b2[s] + fc0[FC0_OUT - 1] + psqt) * scales.NNUE2SCORE
        assert out[i] == pytest.approx(want, abs=0.05), i


def test_pact_learns_its_clips():
    config = TrainConfig(l1=128, epochs=2, batch_size=32, lr=2e-3, val_fraction=0.0, fake_quant_epochs=2,
                         qat="pact", seed=0, log=None)
    model = train(distill_set(), config).model
    assert float(model.pact_ft.detach()) != 1.0
    assert not torch.all(model.pact_fc1 == 1.0)


def test_a_checkpoint_keeps_its_method_and_refuses_another(tmp_path):
    config = TrainConfig(l1=128, epochs=1, batch_size=64, val_fraction=0.0, qat="pact", seed=0,
                         out_dir=str(tmp_path), log=None)
    result = train(distill_set(300, 3), config)
    model = model_from_checkpoint(result.checkpoint)
    assert model.qat == "pact" and float(model.pact_ft.detach()) == float(result.model.pact_ft.detach())
    with pytest.raises(CheckpointError, match="qat"):
        train(distill_set(300, 3), TrainConfig(l1=128, epochs=2, batch_size=64, val_fraction=0.0, seed=0,
                                               log=None), resume=result.checkpoint)

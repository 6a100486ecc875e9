"""The factoriser (HalfKAv2_hm^): virtual (piece, square) features trained alongside the real ones and folded
into them at export, so the exported net is the plain topology and computes what the factorised model did."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch not installed (make train-deps)")

from quantfish.nnue.formulas import eval_report  # noqa: E402
from quantfish.nnue.pychess import mailbox, side_to_move  # noqa: E402
from quantfish.train.distill import board_arrays, random_boards  # noqa: E402
from quantfish.train.checkpoint import CheckpointError  # noqa: E402
from quantfish.train.model import NnueModel  # noqa: E402
from quantfish.train.quanterror import compare  # noqa: E402
from quantfish.train.quantize import export, model_arrays  # noqa: E402
from quantfish.train.trainer import TrainConfig, model_from_checkpoint, train  # noqa: E402
from tests.trainset import distill_set  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("factorised")
    config = TrainConfig(l1=64, factoriser=True, epochs=3, batch_size=64, lr=3e-3, val_fraction=0.1, seed=2,
                         out_dir=str(out), log=None)
    return train(distill_set(600, 5), config), out


def test_the_virtual_rows_learn_and_the_folded_model_is_the_same_function(trained):
    result, _ = trained
    model = result.model.eval()
    virtual = model.ft_weight[model.ft_weight.shape[0] - 704:]
    assert virtual.abs().sum() > 0                            # the shared rows were trained
    plain = model.folded().eval()
    assert not plain.factoriser and plain.ft_weight.shape[0] == 22529
    arr = board_arrays(random_boards(200, seed=4))
    with torch.no_grad():
        a = model(arr.white_idx, arr.black_idx, arr.stm, arr.bucket)
        b = plain(arr.white_idx, arr.black_idx, arr.stm, arr.bucket)
    assert torch.allclose(a, b, rtol=1e-5, atol=1e-2)      # float32 sums in another order


def test_the_exported_integers_are_the_folded_weights_and_the_engine_follows_them(trained, tmp_path):
    result, _ = trained
    model = result.model.eval()
    arrays = model_arrays(model)
    lo, hi = -32768 / 127, 32767 / 127
    assert arrays["ft_weights"].min() >= lo - 1e-6 and arrays["ft_weights"].max() <= hi + 1e-6   # clipped as summed
    net = export(model, tmp_path / "f.nnue")
    boards = random_boards(150, seed=8)
    arr = board_arrays(boards)
    engine = np.array([eval_report(net, mailbox(b), side_to_move(b), 0).nnue_raw for b in boards])
    c = compare(net, arr.white_idx, arr.black_idx, arr.stm, arr.bucket)
    assert np.array_equal(engine, c.integer)
    assert np.all((engine >= c.lo) & (engine <= c.hi))
    with torch.no_grad():
        out = model(arr.white_idx, arr.black_idx, arr.stm, arr.bucket).double().numpy()
    assert np.abs(out - engine).mean() < 20          # internal units: the quantisation error alone


def test_a_checkpoint_keeps_the_choice_and_a_mismatch_is_refused(trained):
    _, out = trained
    model = model_from_checkpoint(out / "last.pt")
    assert model.factoriser
    with pytest.raises(CheckpointError, match="factoriser"):
        train(distill_set(600, 5), TrainConfig(l1=64, epochs=4, batch_size=64, log=None), resume=out / "last.pt")

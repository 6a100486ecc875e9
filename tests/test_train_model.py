"""The float model against Stockfish 15.1's integer net: the same function up to the engine's roundings."""

import csv

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch not installed (make train-deps)")

from quantfish.core.fen import parse_fen# noqa: E402
from quantfish.nnue import scales# noqa: E402
from quantfish.train.distill import feature_rows# noqa: E402
from quantfish.train.ftkernel import feature_transform, reference_transform# noqa: E402
from quantfish.nnue.architecture import PS_NB  # noqa: E402
from quantfish.train.model import PAD, VIRTUAL, NnueModel, fold_factoriser  # noqa: E402
from quantfish.train.quanterror import compare# noqa: E402
from quantfish.train.quantize import dequantise, quantise# noqa: E402
from tests.testdata import NNUE_DATA, require  # noqa: E402
from tests.trainset import distill_set  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def sf15_model(sf_net):
    return dequantise(sf_net)


@pytest.fixture(scope="module")
def reference_rows():
    """Every third row of sf15.1_reference.tsv: indices, side to move, and the 8 buckets' integers."""
    with open(require(NNUE_DATA / "sf15.1_reference.tsv")) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))[::3]
    white, black, stm, psqt, pos, own = [], [], [], [], [], []
    for r in rows:
        p = parse_fen(r["fen"])
        w, b = feature_rows(p.board)
        white.append(w)
        black.append(b)
        stm.append(p.side)
        psqt.append([int(r[f"psqt_{k}"]) for k in range(8)])
        pos.append([int(r[f"positional_{k}"]) for k in range(8)])
        own.append(int(r["bucket"]))
    return tuple(np.array(a) for a in (white, black, stm, psqt, pos, own))


def test_sf15_float_forward_matches_integer_eval_per_bucket(sf_net, sf15_model, reference_rows):
    """For each of the 8 buckets: the integer simulator reproduces the reference integers exactly, the model
    equals the float counterpart (float32 against float64), and the engine's value lies inside the rigorous
    rounding interval. The typical distance float - integer is printed (run with -s)."""
    white, black, stm, psqt, pos, own = reference_rows
    maes = []
    for k in range(8):
        bucket = np.full(len(stm), k)
        c = compare(sf_net, white, black, stm, bucket)
        assert np.array_equal(c.psqt, psqt[:, k]) and np.array_equal(c.positional, pos[:, k]), k
        with torch.no_grad():
            out = sf15_model(white, black, stm, bucket).double().numpy()
        assert np.abs(out - c.real).max() < 0.05, k
        engine = c.integer
        assert np.all((engine >= c.lo) & (engine <= c.hi)), k
        maes.append(np.abs(out - engine).mean())
        assert maes[-1] < 30, (k, maes[-1])           # internal units; measured 10-27 (bucket 0 off-distribution)
    rows = np.arange(len(stm))
    with torch.no_grad():
        out = sf15_model(white, black, stm, own).double().numpy()
    engine = compare(sf_net, white, black, stm, own).integer
    own_mae = np.abs(out - engine).mean()
    assert own_mae < 20                               # measured 14.0 units = 3.9 cp over all 4878 rows
    print(f"\nfloat vs integer MAE (internal units) per bucket: {[round(m, 2) for m in maes]}; "
          f"own bucket {own_mae:.2f} ({own_mae * 100 / 361:.2f} cp) over {len(rows)} positions")


@pytest.mark.parametrize("factoriser", [False, True])   # True: the folded table, virtual rows' gradients summed
@pytest.mark.parametrize("threads", [1, 2])   # 2: the rows of the gradient table shared out between threads
@pytest.mark.parametrize("l1", [96, 128])      # 96: the last column chunk of the backward pass is partial
def test_feature_transform_kernel_matches_pytorch_formulation(l1, threads, factoriser):
    import numba
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        _kernel_against_pytorch(l1, factoriser)
    finally:
        numba.set_num_threads(before)


def _kernel_against_pytorch(l1, factoriser, mixed=False):
    arr = distill_set()
    wi, bi = arr.white_idx[:200], arr.black_idx[:200]        # int32, as a batch holds them
    if mixed:       # every third row's second feature moved to another king bucket
        wi = wi.copy()
        wi[::3, 1] = (wi[::3, 1] + 5 * PS_NB) % (32 * PS_NB)
    gen = torch.Generator().manual_seed(1)
    stm = torch.randint(0, 2, (200,), generator=gen)
    rows = torch.randperm(200, generator=gen)[:150]           # a subset, in another order
    weight = torch.randn(VIRTUAL + (PS_NB if factoriser else 0), l1 + 8, generator=gen) * 0.1
    weight[PAD] = 0
    weight.requires_grad_()
    bias = torch.full((l1,), 0.4, requires_grad=True)
    gx, gp = torch.randn(150, l1, generator=gen), torch.randn(150, 8, generator=gen)
    results = []
    for fn in (feature_transform, reference_transform):
        weight.grad = bias.grad = None
        x, p = fn(wi, bi, stm, rows, weight, bias, l1, PAD, VIRTUAL if factoriser else 0)
        ((x * gx).sum() + (p * gp).sum()).backward()
        results.append((x.detach(), p.detach(), weight.grad.clone(), bias.grad.clone()))
    if factoriser:      # the virtual rows take part: their gradient is not zero
        assert results[1][2][VIRTUAL:].abs().sum() > 0
    for a, b in zip(*results):
        assert torch.allclose(a, b, atol=1e-4), (a - b).abs().max()


@pytest.mark.parametrize("threads", [1, 2])
def test_feature_transform_kernel_takes_rows_whose_features_mix_king_buckets(threads):
    """No HalfKAv2_hm row has features of two king buckets, which the backward pass's share of the rows
    between threads relies on; rows that do are still summed right (their strays on one thread)."""
    import numba
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        _kernel_against_pytorch(64, False, mixed=True)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("factoriser", [False, True])
def test_clip_kernel_equals_the_pytorch_clip(factoriser):
    """The compiled clip of the embedding table leaves the same weights, to the bit, as the PyTorch formulation
    (which a GPU's table takes), with the factoriser's real rows moved so that real + virtual is in range."""
    model = NnueModel(64, seed=4, factoriser=factoriser)
    with torch.no_grad():
        model.ft_weight.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(5))
        model.ft_weight[:, :64].mul_(scales.FT_WEIGHTS.clip_range[1] / 2)   # a real or its sum with its virtual row out
        model.ft_weight[:, 64:].mul_(1e5)
    lo, hi = scales.FT_WEIGHTS.clip_range
    assert (model.ft_weight[:, :64] > hi).any()             # the clip has work to do
    expected = model.ft_weight.detach().clone()
    reference = NnueModel(64, seed=None, factoriser=factoriser)
    with torch.no_grad():
        reference.ft_weight.copy_(expected)
        reference._clip_table_torch(lo, hi, *scales.FT_PSQT.clip_range)
        model.clip_weights()
    assert torch.equal(model.ft_weight, reference.ft_weight)
    folded = fold_factoriser(model.ft_weight.detach())[:PAD]
    assert folded[:, :64].max() <= hi and folded[:, :64].min() >= lo
    assert not torch.equal(model.ft_weight.detach(), expected)


def test_feature_transform_backward_runs_once():
    """The backward pass writes the row gradients over the saved accumulators: a second one must refuse."""
    arr = distill_set()
    wi = torch.as_tensor(arr.white_idx[:20]).long()
    bi = torch.as_tensor(arr.black_idx[:20]).long()
    weight = torch.zeros(PAD + 1, 40, requires_grad=True)
    bias = torch.full((32,), 0.4, requires_grad=True)
    x, p = feature_transform(wi, bi, torch.zeros(20, dtype=torch.int64), torch.arange(20), weight, bias, 32, PAD)
    loss = x.sum() + p.sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="runs once"):
        loss.backward()


def test_model_output_follows_bucket_and_side_to_move(sf15_model, sf_net):
    """Permuting the batch permutes the output (the model sorts by bucket internally)."""
    arr = distill_set()
    n = 64
    args = (arr.white_idx[:n], arr.black_idx[:n], arr.stm[:n], arr.bucket[:n])
    perm = np.random.default_rng(0).permutation(n)
    with torch.no_grad():
        out = sf15_model(*args).numpy()
        out_perm = sf15_model(*(a[perm] for a in args)).numpy()
    assert np.allclose(out[perm], out_perm, atol=1e-3)
    real = compare(sf_net, *args).real
    assert np.abs(out - real).max() < 0.05


def test_clip_weights_keeps_every_parameter_quantisable():
    model = NnueModel(128, seed=3)
    with torch.no_grad():
        model.ft_weight[:, 128:].mul_(1e9)                  # PSQT columns (the FT ones: see test_train_export)
        for p in (model.w0, model.b0, model.w1, model.b1, model.w2, model.b2):
            p.mul_(1e9)
    model.clip_weights()
    net = quantise(model)                     # would raise QuantisationError on any overflow
    assert int(np.abs(net.w0).max()) == 127 and int(np.abs(net.w2).max()) == 127
    assert int(np.abs(net.ft_psqt).max()) > 2**31 - 100 and int(np.abs(net.b1).max()) > 2**31 - 100
    lo, hi = scales.W2.clip_range
    assert model.w2.max().item() <= hi and model.w2.min().item() >= lo


def test_fake_quant_forward_equals_exported_weights():
    """With fake quantisation on, the model computes with exactly the weights the export writes."""
    arr = distill_set()
    model = NnueModel(128, seed=5)
    with torch.no_grad():
        for p in (model.w0, model.w1, model.w2):
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(2)) * 0.3)
    model.clip_weights()
    model.fake_quant = True
    args = (arr.white_idx[:100], arr.black_idx[:100], arr.stm[:100], arr.bucket[:100])
    with torch.no_grad():
        fq = model(*args).numpy()
        model.fake_quant = False
        raw = model(*args).numpy()
        snapped = dequantise(quantise(model))(*args).numpy()
    assert np.abs(fq - snapped).max() < 0.02
    assert np.abs(raw - snapped).max() > 0.02          # rounding the weights does change the output


def test_the_trainer_keeps_freed_memory_under_glibc():
    """A step's large tensors are served again from the heap, not mapped anew (quantfish.train.alloc)."""
    import platform
    from quantfish.train.alloc import keep_freed_memory
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc: the C library's own policy applies")
    assert keep_freed_memory() is True


def test_the_folded_table_left_by_the_clip_is_used_only_while_the_table_is_unchanged():
    """The clip leaves the factorised table's folded form for the next forward pass: it must equal a fold of
    the clipped table to the bit, and must not be used once the table has changed (in place, by a load, or
    by a write PyTorch does not count)."""
    from quantfish.train import ftkernel
    model = NnueModel(64, seed=3, factoriser=True)
    weight = model.ft_weight
    with torch.no_grad():
        weight.normal_(0.0, 0.3, generator=torch.Generator().manual_seed(6))
    model.clip_weights()
    saved = ftkernel._folded_table(weight, VIRTUAL, model._folded)
    assert saved is model._folded.table
    assert np.array_equal(saved, fold_factoriser(weight.detach()).numpy())
    with torch.no_grad():
        weight[VIRTUAL:].add_(0.01)                  # an optimiser's in-place step
    after = ftkernel._folded_table(weight, VIRTUAL, model._folded)
    assert after is not saved
    assert np.array_equal(after, fold_factoriser(weight.detach()).numpy())
    model.clip_weights()
    other = NnueModel(64, seed=4, factoriser=True)
    model.load_state_dict(other.state_dict())
    assert ftkernel._folded_table(weight, VIRTUAL, model._folded) is not model._folded.table
    model.clip_weights()
    model.weights_overwritten()
    assert model._folded is None

    # The model's output is the same whether the forward pass takes the clip's fold or makes its own.
    arr = distill_set()
    args = (arr.white_idx[:50], arr.black_idx[:50], arr.stm[:50], arr.bucket[:50])
    model.clip_weights()
    with torch.no_grad():
        with_saved = model(*args)
        model.weights_overwritten()
        fresh = model(*args)
    assert torch.equal(with_saved, fresh)


@pytest.mark.parametrize("threads", [1, 2])
def test_layer_stack_kernel_equals_pytorch_autograd(threads):
    """The fused layer stacks give the PyTorch stacks' output and every gradient, on a batch of all 8
    buckets in any order, with activations on both sides of each clamp."""
    import numba
    from quantfish.train.stackkernel import layer_stacks
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        gen = torch.Generator().manual_seed(8)
        model = NnueModel(64, seed=2)
        with torch.no_grad():
            for p in (model.w0, model.b0, model.w1, model.b1, model.w2, model.b2):
                p.add_(torch.randn(p.shape, generator=gen) * 0.5)       # stacks differ, activations saturate
        n = 300
        x0 = torch.rand(n, 64, generator=gen)
        bucket = torch.randint(0, 8, (n,), generator=gen)
        grad = torch.randn(n, generator=gen)
        params = (model.w0, model.b0, model.w1, model.b1, model.w2, model.b2)
        results = []
        for fused in (True, False):
            x = x0.clone().requires_grad_()
            for p in params:
                p.grad = None
            if fused:
                out = layer_stacks(x, bucket, *params)
            else:
                rows = [torch.nonzero(bucket == s).squeeze(1) for s in range(8)]
                out = torch.zeros(n).index_put((torch.cat(rows),),
                                               torch.cat([model._stack(s, x[r], *params) for s, r in enumerate(rows)]))
            (out * grad).sum().backward()
            results.append([out.detach(), x.grad] + [p.grad.clone() for p in params])
        fc0 = torch.nn.functional.linear(x0, model.w0[:16], model.b0[:16])
        assert (fc0[:, :15] > 1).any() and (fc0[:, :15] < 0).any()          # both clamps' sides are used
        for a, b in zip(*results):
            assert torch.allclose(a, b, rtol=1e-4, atol=1e-4), (a - b).abs().max()
    finally:
        numba.set_num_threads(before)

"""quantfish.nnue.netdir: one net's search-time arrays as one directory of addresses in the search tuple, read back as
views of the very same arrays."""
import numpy as np
import pytest
from numba import literal_unroll, njit, typeof

from quantfish.nnue.kernel import loader as ckernel

from quantfish.nnue import netdir
from quantfish.nnue.kernel.loader import CNET_SPEC, CNet
from quantfish.nnue.layers import make_scratch
from quantfish.nnue.net import NET_ARRAYS_SPEC, NetArrays


def _parts(net):
    arrays = net.arrays()
    l1 = arrays.ft_bias.shape[0]
    acc, psqt = ckernel.make_cstack(l1, 6)[:2]
    acc[:] = np.arange(acc.size, dtype=np.int64).reshape(acc.shape).astype(np.int16)
    psqt[:] = 7
    return (arrays, ckernel.make_cnet(net, align_ft=False), acc, psqt, ckernel.make_refresh_cache(net),
            make_scratch(l1))


def _flat(parts):
    arrays, cnet, acc, psqt, cache, scratch = parts
    return list(arrays) + list(cnet) + [acc, psqt] + list(cache) + list(scratch)


@njit
def _summary(views):
    """(address, size, sum) of every view, and a write through the stack's acc view."""
    net, cnet, acc, psqt, cache, scratch = views
    flat = ((net.ft_bias, net.ft_weights, net.ft_psqt, net.b0, net.w0, net.w0t, net.b1, net.w1, net.b2, net.w2,
             net.params, net.qscheme)
            + (cnet.ft_bias, cnet.ft_weights, cnet.ft_psqt, cnet.b0, cnet.w0g, cnet.fc0_sat, cnet.b1, cnet.w1g,
               cnet.b2, cnet.w2, cnet.params) + (acc, psqt) + cache + scratch)
    out = np.zeros((netdir.N_ENTRIES, 3), np.int64)
    k = 0
    for v in literal_unroll(flat):
        out[k, 0] = v.ctypes.data
        out[k, 1] = v.size
        s = 0
        for x in v.ravel():
            s += np.int64(x)
        out[k, 2] = s
        k += 1
    acc[1, 1, 3] = 1234
    return out


@njit
def _from_directory(d):
    return _summary(netdir.unpack(d))


def test_directory_views_are_the_arrays_themselves(nnue17_pair):
    parts = _parts(nnue17_pair.small)
    items = _flat(parts)
    sums = [int(a.astype(np.int64).sum()) for a in items]
    got = _from_directory(netdir.directory(*parts))
    for k, a in enumerate(items):
        assert got[k, 0] == a.ctypes.data and got[k, 1] == a.size and got[k, 2] == sums[k], k
    assert parts[2][1, 1, 3] == 1234          # a write through the view reaches the original


def test_directory_refuses_wrong_arrays(nnue17_pair):
    arrays, cnet, acc, psqt, cache, scratch = _parts(nnue17_pair.small)
    with pytest.raises(ValueError, match=f"entry {len(NET_ARRAYS_SPEC) + len(CNET_SPEC)}"):   # the stack's acc
        netdir.directory(arrays, cnet, acc.astype(np.int32), psqt, cache, scratch)
    with pytest.raises(ValueError, match="C-contiguous"):
        netdir.directory(arrays, cnet, acc[:, :, ::2], psqt, cache, scratch)
    with pytest.raises(ValueError, match="arrays, expected"):
        netdir.directory(arrays[:-1], cnet, acc, psqt, cache, scratch)


def test_specs_follow_the_named_tuples():
    """The directory's entries are NetArrays' fields, then CNet's, in field order, with their declared dtypes
    and ndims (the specs are instances of the named tuples, so the fields cannot drift)."""
    assert type(NET_ARRAYS_SPEC) is NetArrays and type(CNET_SPEC) is CNet
    n_net, n_cnet = len(NetArrays._fields), len(CNet._fields)
    assert (netdir.E_NET, netdir.E_CNET, netdir.E_ACC) == (0, n_net, n_net + n_cnet)
    assert netdir.SPEC[netdir.E_NET:netdir.E_CNET] == tuple(NET_ARRAYS_SPEC)
    assert netdir.SPEC[netdir.E_CNET:netdir.E_ACC] == tuple(CNET_SPEC)
    assert netdir.N_ENTRIES == len(netdir.SPEC) == netdir.E_SCRATCH + 3
    # CNet shares the FT arrays of Net.arrays(), so their specs are the same
    for name in ("ft_bias", "ft_weights", "ft_psqt"):
        assert getattr(CNET_SPEC, name) == getattr(NET_ARRAYS_SPEC, name)


def test_unpack_gives_the_types_of_the_arrays_passed_from_python(nnue17_pair):
    """The views unpack builds have the Numba types of Net.arrays() and make_cnet's CNet themselves, so the
    search (views) and direct callers (arrays) share one compiled version of every function."""
    parts = _parts(nnue17_pair.small)
    d = netdir.directory(*parts)
    _from_directory(d)
    # unpack is inlined into its callers, so compile a standalone version to read its return type.
    netdir.unpack.compile((typeof(d),))
    ret = netdir.unpack.nopython_signatures[0].return_type
    arrays, cnet, acc, psqt, cache, scratch = parts
    assert ret[0] == typeof(arrays) and ret[1] == typeof(cnet)
    assert ret[2] == typeof(acc) and ret[3] == typeof(psqt)
    assert ret[4] == typeof(cache) and ret[5] == typeof(scratch)

"""Array views over raw addresses, for arrays that compiled code must reach without being passed them.

Every array passed to a compiled function costs its ~8 words of argument passing at every call, and the
search is called once per node: a table of addresses (one array) can stand for many arrays. ``array_view``
rebuilds a C-contiguous view from a row ``(address, d0, d1, ...)`` of such a table, with no owner (no reference
counting) and no checks: whoever fills the table must keep the arrays alive and C-contiguous while it is used.
``views(spec)`` makes the function that rebuilds a whole tuple of such views, typed by a spec (one
``ArraySpec`` per array), so a table and its reader follow one declaration.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import types
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array
from numba.np.numpy_support import from_dtype


class ArraySpec(NamedTuple):
    """dtype and number of dimensions of one array that compiled code receives."""

    dtype: type
    ndim: int

    def matches(self, a) -> bool:
        return isinstance(a, np.ndarray) and a.dtype == self.dtype and a.ndim == self.ndim

    def describe(self) -> str:
        return f"{np.dtype(self.dtype)}[{self.ndim}d]"


def check_arrays(spec, arrays, what: str) -> None:
    """Raise ValueError unless ``arrays`` has one array per entry of ``spec``, each of that dtype and ndim."""
    if len(arrays) != len(spec):
        raise ValueError(f"{what}: {len(arrays)} arrays, expected {len(spec)}")
    names = getattr(spec, "_fields", None) or range(len(spec))
    for name, s, a in zip(names, spec, arrays):
        if not s.matches(a):
            found = f"{a.dtype}[{a.ndim}d]" if isinstance(a, np.ndarray) else type(a).__name__
            raise ValueError(f"{what}: {name} is {found}, expected {s.describe()}")


def _view(context, builder, tab_ty, tab, row, result):
    """Lower one view: ``result`` (a C-contiguous array type) over table row ``row`` (an intp value)."""
    def cell(k):
        ptr = cgutils.get_item_pointer(context, builder, tab_ty, tab, [row, context.get_constant(types.intp, k)],
                                       wraparound=False)
        return builder.load(ptr)

    nd = result.ndim
    out = context.make_array(result)(context, builder)
    shape = [cell(1 + i) for i in range(nd)]
    itemsize = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(result.dtype)))
    strides = [None] * nd
    stride = itemsize
    for i in reversed(range(nd)):
        strides[i] = stride
        stride = builder.mul(stride, shape[i])
    data = builder.inttoptr(cell(0), out.data.type)
    populate_array(out, data=data, shape=shape, strides=strides, itemsize=itemsize, meminfo=None)
    return out._getvalue()


def _is_table(table) -> bool:
    return isinstance(table, types.Array) and table.ndim == 2 and table.dtype == types.int64


@intrinsic(prefer_literal=True)
def array_view(typingctx, table, row, dtype, ndim):
    """C-contiguous ``dtype[ndim]`` view of table row ``row`` = (address, d0, ..., d_ndim-1, ...); ``table`` is
    a 2-d int64 array and ``ndim`` a literal."""
    if not _is_table(table):
        return None
    if not isinstance(ndim, types.IntegerLiteral) or not isinstance(dtype, (types.NumberClass, types.DType)):
        return None
    result = types.Array(dtype.dtype, ndim.literal_value, "C")

    def codegen(context, builder, signature, args):
        tab_ty = signature.args[0]
        tab = context.make_array(tab_ty)(context, builder, args[0])
        r = context.cast(builder, args[1], signature.args[1], types.intp)
        return _view(context, builder, tab_ty, tab, r, result)

    return result(table, row, dtype, ndim), codegen


def views(spec):
    """A compiled-code function ``(table, first) ->`` the views of rows ``first, first + 1, ...``, one per entry
    of ``spec`` (``ArraySpec``s): a tuple, or, when ``spec`` is a named tuple, an instance of its class (the
    Numba type that the same named tuple of arrays gets when passed from Python)."""
    arrays = [types.Array(from_dtype(np.dtype(s.dtype)), s.ndim, "C") for s in spec]
    cls = type(spec) if hasattr(spec, "_fields") else None
    result = types.BaseTuple.from_types(arrays, cls) if cls is not None else types.BaseTuple.from_types(arrays)

    @intrinsic
    def read_views(typingctx, table, first):
        if not _is_table(table) or not isinstance(first, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            tab_ty = signature.args[0]
            tab = context.make_array(tab_ty)(context, builder, args[0])
            r0 = context.cast(builder, args[1], signature.args[1], types.intp)
            items = [_view(context, builder, tab_ty, tab, builder.add(r0, context.get_constant(types.intp, k)), a)
                     for k, a in enumerate(arrays)]
            return context.make_tuple(builder, result, items)

        return result(table, first), codegen

    return read_views


@intrinsic
def word64(typingctx, arr, k):
    """Bytes ``8k .. 8k+7`` of a contiguous 1-d array of bytes as one uint64 (an unaligned load; the caller keeps
    ``8k + 8`` within the array): eight squares of a mailbox compared at once."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C" and arr.dtype.bitwidth == 8
            and isinstance(k, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        aryty, kty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = builder.mul(context.cast(builder, args[1], kty, types.intp), context.get_constant(types.intp, 8))
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx], wraparound=False)
        wptr = builder.bitcast(ptr, ir.IntType(64).as_pointer())
        load = builder.load(wptr)
        load.align = 1
        return load

    return types.uint64(arr, k), codegen

"""Array views over raw addresses, for arrays that compiled code must reach without being passed them.

Every array passed to a compiled function costs its ~8 words of argument passing at every call, and the
search is called once per node: a table of addresses (one array) can stand for many arrays. ``array_view``
rebuilds a C-contiguous view from a row ``(address, d0, d1, ...)`` of such a table, with no owner (no reference
counting) and no checks: whoever fills the table must keep the arrays alive and C-contiguous while it is used.
"""
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array


@intrinsic(prefer_literal=True)
def array_view(typingctx, table, row, dtype, ndim):
    """C-contiguous ``dtype[ndim]`` view of table row ``row`` = (address, d0, ..., d_ndim-1, ...); ``table`` is
    a 2-d int64 array and ``ndim`` a literal."""
    if not (isinstance(table, types.Array) and table.ndim == 2 and table.dtype == types.int64):
        return None
    if not isinstance(ndim, types.IntegerLiteral) or not isinstance(dtype, (types.NumberClass, types.DType)):
        return None
    nd = ndim.literal_value
    dt = dtype.dtype
    result = types.Array(dt, nd, "C")

    def codegen(context, builder, signature, args):
        tab_ty = signature.args[0]
        tab = context.make_array(tab_ty)(context, builder, args[0])
        r = context.cast(builder, args[1], signature.args[1], types.intp)

        def cell(k):
            ptr = cgutils.get_item_pointer(context, builder, tab_ty, tab, [r, context.get_constant(types.intp, k)],
                                           wraparound=False)
            return builder.load(ptr)

        out = context.make_array(result)(context, builder)
        shape = [cell(1 + i) for i in range(nd)]
        itemsize = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(dt)))
        strides = [None] * nd
        stride = itemsize
        for i in reversed(range(nd)):
            strides[i] = stride
            stride = builder.mul(stride, shape[i])
        data = builder.inttoptr(cell(0), out.data.type)
        populate_array(out, data=data, shape=shape, strides=strides, itemsize=itemsize, meminfo=None)
        return out._getvalue()

    return result(table, row, dtype, ndim), codegen

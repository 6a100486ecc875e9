"""Numba intrinsics the search needs: owner-less array views and a cache prefetch.

``borrowed``: every array a Numba function receives is reference counted, and the count is changed with an
atomic instruction each time the array is passed to a function that is not inlined. The recursive search
passes a tuple of about sixty arrays at every node, so measured with ``perf`` those atomics took more than
half of the search's time. ``borrowed`` gives the same arrays with no owner (a null meminfo, as
``numba.carray`` views have), which Numba's reference counting skips. The search functions are also compiled
without reference counting (see ``engine.search``); the views still matter for any callee that was compiled
with it for another caller first (one compiled version serves every caller). The caller must keep the
originals alive while the views are in use: the search makes them at the root of each iteration and drops
them when it returns.

``prefetch``: the transposition-table probe is the search's most frequent cache miss; Stockfish prefetches
the table's bucket as soon as the key of the next position is known, and so do we.
"""
from llvmlite import ir
from llvmlite.binding import llvm_version_info
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _strip(context, builder, ty, value):
    if isinstance(ty, types.Array):
        ary = cgutils.create_struct_proxy(ty)(context, builder, value=value)
        ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
        ary.parent = cgutils.get_null_value(ary.parent.type)
        return ary._getvalue()
    if isinstance(ty, types.BaseTuple):
        for i, item_ty in enumerate(ty):
            item = builder.extract_value(value, i)
            value = builder.insert_value(value, _strip(context, builder, item_ty, item), i)
        return value
    return value


@intrinsic
def borrowed(typingctx, value):
    """``value`` (an array or a nested tuple holding arrays) with every array's owner removed."""
    def codegen(context, builder, signature, args):
        return _strip(context, builder, signature.args[0], args[0])
    return value(value), codegen


# The intrinsic's name carries its pointer type: "p0" since LLVM 15's opaque pointers, "p0i8" before.
_PREFETCH = "llvm.prefetch.p0" if llvm_version_info[0] >= 15 else "llvm.prefetch.p0i8"


@intrinsic
def prefetch(typingctx, arr, index):
    """Asks the CPU to start loading the cache line of ``arr[index]`` (1-d array, index in range)."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = context.cast(builder, args[1], idxty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _PREFETCH)
        # read access, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(arr, index), codegen

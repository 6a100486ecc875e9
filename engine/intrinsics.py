"""Numba intrinsics the search needs: owner-less array views.

``borrowed``: every array a Numba function receives is reference counted, and the count is changed with an
atomic instruction each time the array is passed to a function that is not inlined. The recursive search
passes a tuple of about sixty arrays at every node, so measured with ``perf`` those atomics took more than
half of the search's time. ``borrowed`` gives the same arrays with no owner (a null meminfo, as
``numba.carray`` views have), which Numba's reference counting skips. The search functions are also compiled
without reference counting (see ``engine.search``); the views still matter for any callee that was compiled
with it for another caller first (one compiled version serves every caller). The caller must keep the
originals alive while the views are in use: the search makes them at the root of each iteration and drops
them when it returns.
"""
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

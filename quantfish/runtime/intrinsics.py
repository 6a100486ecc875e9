"""Numba intrinsics the search needs: owner-less array views.

``borrowed``: every array a Numba function receives is reference counted, and the count is changed with an
atomic instruction each time the array is passed to a function that is not inlined. The recursive search
passes a tuple of about sixty arrays at every node, so measured with ``perf`` those atomics took more than
half of the search's time. ``borrowed`` gives the same arrays with no owner (a null meminfo, as
``numba.carray`` views have), which Numba's reference counting skips. The search functions are also compiled
without reference counting (see ``quantfish.search.tree``); the views still matter for any callee that was compiled
with it for another caller first (one compiled version serves every caller). The caller must keep the
originals alive while the views are in use: the search makes them at the root of each iteration and drops
them when it returns.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.typing.templates import AttributeTemplate
from numba.extending import infer_getattr, intrinsic, lower_getattr_generic, models, register_model


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


class StateRef(types.Type):
    """A pointer to a NamedTuple of arrays laid out in memory (``state_ref``), read by field name like the tuple.

    Numba passes a tuple argument as its flattened members, some 8 words per array, so every call of a function
    taking the search state copied a few hundred words. Through a ``StateRef`` a call passes one pointer, and a
    field read is one load from memory, as it was from the stack before."""

    def __init__(self, tuple_type):
        self.tuple_type = tuple_type
        super().__init__(name=f"StateRef({tuple_type})")


@register_model(StateRef)
class _StateRefModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, dmm.lookup(fe_type.tuple_type).get_data_type().as_pointer())


@infer_getattr
class _StateRefAttributes(AttributeTemplate):
    key = StateRef

    def generic_resolve(self, ref, attr):
        fields = ref.tuple_type.fields
        if attr in fields:
            return ref.tuple_type.types[fields.index(attr)]
        return None


@lower_getattr_generic(StateRef)
def _state_ref_getattr(context, builder, ref, value, attr):
    i = ref.tuple_type.fields.index(attr)
    model = context.data_model_manager[ref.tuple_type.types[i]]
    return model.load_from_data_pointer(builder, cgutils.gep_inbounds(builder, value, 0, i))


@intrinsic
def state_ref(typingctx, state):
    """A ``StateRef`` to a copy of ``state`` (a NamedTuple) stored in the caller's stack frame: valid until the
    caller returns. Give it ``borrowed`` arrays: the copy holds no references to them."""
    if not isinstance(state, types.NamedTuple):
        return None

    def codegen(context, builder, signature, args):
        model = context.data_model_manager[signature.args[0]]
        slot = cgutils.alloca_once(builder, model.get_data_type())
        builder.store(model.as_data(builder, args[0]), slot)
        return slot
    return StateRef(state)(state), codegen


@intrinsic
def peek_u8(typingctx, address):
    """The byte at ``address`` (an int64 holding a pointer): how compiled code reads a file mapped by Python
    (the Syzygy tables, ``quantfish.tablebase.probe``) without copying it into an array. The caller keeps the mapping
    alive."""
    if not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], ir.IntType(8).as_pointer())
        return builder.load(ptr)
    return types.uint8(address), codegen


@intrinsic
def prefetch(typingctx, address):
    """Starts bringing the cache line at ``address`` (an int64 holding a pointer) into the cache for a read
    that follows later, so that its memory latency overlaps other work (LLVM's ``llvm.prefetch``)."""
    if not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        ptr = builder.inttoptr(args[0], ir.IntType(8).as_pointer())
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])      # read, keep in all cache levels, data
        return context.get_dummy_value()
    return types.none(address), codegen

"""A software prefetch as an LLVM intrinsic.

Numba has no way to ask for a cache line ahead of its use. The exact sparse
Adam update (:mod:`phdlib.kernels.adam_replay`) reads rows of three large
tables in an order no hardware prefetcher can guess (a batch's rows): at the
Amazon shape, asking for the next rows while one is replayed took about a
sixth off the time of bringing a batch's rows up to date (measured).
``llvm.prefetch`` is a hint: it compiles to ``prefetchw`` / ``prefetcht0`` on
x86-64 (``prfm`` on AArch64) and never faults, even past an array's end.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, i):
    """Ask for the cache line holding element ``i`` (flat index) of the C-contiguous array
    ``arr``, to be written (``llvm.prefetch``, write, high locality)."""
    if not isinstance(arr, types.Array) or not isinstance(i, types.Integer):
        return None
    sig = types.void(arr, i)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        base = builder.bitcast(ary.data, i8p)
        size = context.get_abi_sizeof(context.get_data_type(signature.args[0].dtype))
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = builder.gep(base, [builder.mul(index, ir.Constant(index.type, size))])
        fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p],
                                              ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
        builder.call(fn, [ptr, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen

"""Exactly rounded float32 operations as single LLVM intrinsics.

Numba lowers ``math.sqrt`` on float32 to a scalar call that LLVM will not
vectorise, and has no fused multiply-add. These two intrinsics compile to one
instruction each (``vsqrtps`` / ``vfmadd``) and vectorise. ``fma32`` rounds
once, as the fused multiply-add of PyTorch's vectorised kernels does, which is
what lets :mod:`phdlib.kernels.adam` reproduce PyTorch's Adam bit for bit.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def fma32(typingctx, a, b, c):
    """``a * b + c`` for float32 with one rounding (LLVM ``llvm.fma.f32``)."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        f = ir.FloatType()
        fn = builder.module.declare_intrinsic("llvm.fma", [f], ir.FunctionType(f, [f, f, f]))
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def sqrt32(typingctx, a):
    """Correctly rounded float32 square root (LLVM ``llvm.sqrt.f32``)."""
    sig = types.float32(types.float32)

    def codegen(context, builder, signature, args):
        f = ir.FloatType()
        fn = builder.module.declare_intrinsic("llvm.sqrt", [f], ir.FunctionType(f, [f]))
        return builder.call(fn, args)

    return sig, codegen

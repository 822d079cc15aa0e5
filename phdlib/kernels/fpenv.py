"""Flushing subnormal float32 numbers to zero on the current thread (FTZ and DAZ).

Adam decays the moments of every row a batch does not touch (the dense
update of TF1's Adam, kept by :mod:`phdlib.kernels.adam`). A row untouched for
about 800 steps has its first moment below float32's smallest normal number
(1.2e-38), and x86 CPUs compute with such *subnormal* numbers through a slow
microcode path: at the ML-10M shape about 15% of the user rows are there at
any time, and a training step took 11 ms instead of 3.

TensorFlow runs every CPU kernel with subnormals flushed to zero (its thread
pools and ``OpKernel`` execution set ``ScopedFlushDenormal``), so the
released code's Adam on CPU never computed with them either. A subnormal
moment moves no parameter in practice: its share of an update is below the last bit of any
parameter not itself within a few powers of ten of 1e-38. The tests check
that the parameters are the same bit for bit with and without flushing, on
a run whose moments go subnormal, on one and two threads.

:func:`flush_set`, :func:`flush_enter` and :func:`flush_restore` are Numba
functions (callable from Python or from kernels, also inside ``prange``
bodies, whose worker threads have their own control register): x86-64 sets MXCSR's FTZ and DAZ
bits, AArch64 FPCR's FZ bit. Elsewhere they do nothing (:data:`SUPPORTED`
is False) and subnormals are computed as before, only slower. Each call
is also a compiler barrier, so that no load or store of an array moves
across it.
"""
from __future__ import annotations

import os
import platform
from contextlib import contextmanager

import numba as nb
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_MACHINE = platform.machine().lower()
_X86 = _MACHINE in ("x86_64", "amd64")
_ARM64 = _MACHINE in ("aarch64", "arm64")
#: Whether this CPU's flush-to-zero mode is set here (x86-64, AArch64).
SUPPORTED = _X86 or _ARM64

_MXCSR_FTZ_DAZ = 0x8040   # MXCSR bit 15 (flush to zero) and bit 6 (denormals are zero)
_FPCR_FZ = 1 << 24        # FPCR bit 24 (flush to zero, inputs and outputs)


def _barrier(builder):
    """An empty ``asm volatile`` with a memory clobber: memory accesses stay on their side."""
    builder.asm(ir.FunctionType(ir.VoidType(), []), "", "~{memory}", [], True)


def _read(builder):
    """The control register, as i64."""
    i64 = ir.IntType(64)
    if _X86:
        i32 = ir.IntType(32)
        slot = builder.alloca(i32)
        fn = builder.module.declare_intrinsic("llvm.x86.sse.stmxcsr",
                                              fnty=ir.FunctionType(ir.VoidType(), [slot.type]))
        builder.call(fn, [slot])
        return builder.zext(builder.load(slot), i64)
    if _ARM64:
        fn = builder.module.declare_intrinsic("llvm.aarch64.get.fpcr",
                                              fnty=ir.FunctionType(i64, []))
        return builder.call(fn, [])
    return ir.Constant(i64, 0)


def _write(builder, value):
    """Set the control register from an i64."""
    if _X86:
        i32 = ir.IntType(32)
        slot = builder.alloca(i32)
        builder.store(builder.trunc(value, i32), slot)
        fn = builder.module.declare_intrinsic("llvm.x86.sse.ldmxcsr",
                                              fnty=ir.FunctionType(ir.VoidType(), [slot.type]))
        builder.call(fn, [slot])
    elif _ARM64:
        fn = builder.module.declare_intrinsic(
            "llvm.aarch64.set.fpcr", fnty=ir.FunctionType(ir.VoidType(), [ir.IntType(64)]))
        builder.call(fn, [value])


_BITS = _MXCSR_FTZ_DAZ if _X86 else _FPCR_FZ if _ARM64 else 0


@intrinsic
def _set(typingctx, on):
    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        _barrier(builder)
        old = _read(builder)
        cleared = builder.and_(old, ir.Constant(i64, ~_BITS & 0xFFFFFFFFFFFFFFFF))
        mask = builder.select(args[0], ir.Constant(i64, _BITS), ir.Constant(i64, 0))
        _write(builder, builder.or_(cleared, mask))
        _barrier(builder)
        return old

    return types.int64(types.boolean), codegen


@intrinsic
def _restore(typingctx, old):
    def codegen(context, builder, signature, args):
        _barrier(builder)
        _write(builder, args[0])
        _barrier(builder)
        return context.get_dummy_value()

    return types.void(types.int64), codegen


@nb.njit(cache=True)
def flush_set(on: bool) -> int:
    """Flush subnormals to zero on this thread (``on``) or compute them (not ``on``).

    Returns the old control word for :func:`flush_restore`. Kernels whose
    ``prange`` chunks must run in a given mode set it this way in each chunk
    (a worker thread keeps whatever mode it was left in, or was created in).
    """
    return _set(on)


@nb.njit(cache=True)
def flush_enter() -> int:
    """Flush subnormals to zero on this thread; returns the old control word for :func:`flush_restore`."""
    return _set(True)


_POOL: dict = {}  # the process that started Numba's worker pool here


@nb.njit(parallel=True, cache=True)
def _touch_pool(n):
    s = 0
    for i in nb.prange(n):
        s += i
    return s


@nb.njit(cache=True)
def flush_restore(old: int) -> None:
    """Put back the control word :func:`flush_enter` returned."""
    _restore(old)


@contextmanager
def flush_denormals(enabled: bool = True):
    """While active, float arithmetic on this thread flushes subnormals to zero.

    Covers NumPy, Numba and single-threaded PyTorch code run on the calling
    thread. Each thread has its own control register: kernels with worker
    threads set the mode per chunk, as
    :func:`phdlib.kernels.adam.adam_rows_parallel` does; PyTorch's own worker
    threads (``PHD_TORCH_THREADS`` > 1 on the autograd step) are not
    flushed. Numba's worker pool is started before the mode is set, so that
    it does not inherit it. ``enabled=False`` changes nothing.
    """
    if not enabled:
        yield
        return
    # Numba's worker threads inherit the mode of the thread that starts them: start
    # them (once per process) outside the block, so that they do not keep flushing
    if _POOL.get("pid") != os.getpid():  # a forked child starts a pool of its own
        _touch_pool(nb.get_num_threads())
        _POOL["pid"] = os.getpid()
    old = flush_enter()
    try:
        yield
    finally:
        flush_restore(old)

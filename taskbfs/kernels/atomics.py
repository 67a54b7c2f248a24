"""Atomic integer updates, a wall clock and a yield for compiled code run on several threads.

Returns
    :func:`fetch_add` / :func:`fetch_or` (the value before the update), :func:`load_acquire`,
    :func:`wall_ns`
    (``time.time_ns()`` from compiled code), :func:`yield_cpu`.
Approach
    numba offers no atomics on the CPU: these are LLVM ``atomicrmw`` instructions on one
    array element, and calls of the C library's ``clock_gettime(CLOCK_REALTIME)`` and
    ``sched_yield``. They let the threads that run a level's tasks
    (:mod:`taskbfs.kernels.level_tasks`) claim tasks one at a time, set bits of shared
    bitmap words and time each task, with no Python between tasks.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _rmw(op: str, result_type):
    def typer(typingctx, arr, idx, val):
        sig = result_type(arr, idx, val)

        def codegen(context, builder, sig, args):
            aryty = sig.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
            value = context.cast(builder, args[2], sig.args[2], result_type)
            return builder.atomic_rmw(op, ptr, value, "seq_cst")

        return sig, codegen

    return intrinsic(typer)


#: ``fetch_add(a, i, x)``: add ``x`` to the int64 ``a[i]`` atomically; returns the old value.
fetch_add = _rmw("add", types.int64)
#: ``fetch_or(a, i, x)``: OR ``x`` into the uint64 ``a[i]`` atomically; returns the old value.
fetch_or = _rmw("or", types.uint64)


@intrinsic
def load_acquire(typingctx, arr, idx):
    """``a[i]`` of an int64 array, read atomically (a wait loop re-reads it every time)."""
    sig = types.int64(arr, idx)

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        return builder.load_atomic(ptr, "acquire", 8)

    return sig, codegen


@intrinsic
def wall_ns(typingctx):
    """Nanoseconds since the epoch (``CLOCK_REALTIME``, the clock of ``time.time``)."""
    sig = types.int64()

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        timespec = ir.LiteralStructType([i64, i64])
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32), timespec.as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "clock_gettime")
        ts = cgutils.alloca_once(builder, timespec)
        builder.call(fn, [ir.Constant(ir.IntType(32), 0), ts])
        sec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 0))
        nsec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 1))
        return builder.add(builder.mul(sec, ir.Constant(i64, 1_000_000_000)), nsec)

    return sig, codegen


@intrinsic
def yield_cpu(typingctx):
    """Give the core to another thread (``sched_yield``); returns 0."""
    sig = types.int64()

    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(ir.IntType(32), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "sched_yield")
        builder.call(fn, [])
        return ir.Constant(ir.IntType(64), 0)

    return sig, codegen

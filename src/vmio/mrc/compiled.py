"""What the compiled loops of the miss-ratio curves and of membal's page caches share: the numba ``jit``
(``vmio.system.jit``: stand-ins without the ``sim`` extra), the int64 array type and a prefetch hint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from vmio.system.jit import HAVE_NUMBA, njit

F = TypeVar("F", bound=Callable[..., Any])
I64 = npt.NDArray[np.int64]


def jit(fn: F) -> F:
    return cast(F, njit(cache=True, nogil=True)(fn))


LOOKAHEAD = 8  # accesses ahead whose page rows the kernels ask the CPU to fetch (see ``prefetch``)


def _compiled_prefetch() -> Callable[[Any, Any], None]:
    from llvmlite import ir  # type: ignore[import-untyped]
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def _prefetch(typingctx: Any, array: Any, row: Any) -> Any:
        """``prefetch(array, row)`` in compiled code: ask the CPU to bring the first cache line of ``array[row]``
        (a C-ordered array of any dimension) into its caches (LLVM's ``llvm.prefetch``: a read, high
        locality). Only a hint: it changes no value and cannot fault, so the results stay exactly those of the
        loop without it; it lets the memory fetches of the next accesses overlap the work on this one."""
        del typingctx

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            kind = signature.args[0]
            ary = context.make_array(kind)(context, builder, args[0])
            index = context.cast(builder, args[1], signature.args[1], types.intp)
            zeros = [context.get_constant(types.intp, 0)] * (kind.ndim - 1)
            ptr = cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
                context, builder, kind, ary, [index, *zeros], wraparound=False
            )
            i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
            fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")  # type: ignore[no-untyped-call]
            builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
            return context.get_dummy_value()

        return types.void(array, row), codegen

    return cast(Callable[[Any, Any], None], _prefetch)


@jit
def _no_prefetch(array: Any, row: Any) -> None:  # pragma: no cover - numba is not installed
    """Without numba the kernels never run (calling one says which extra to install)."""


prefetch = _compiled_prefetch() if HAVE_NUMBA else _no_prefetch

"""What a GPU kernel launch costs the host: a numba kernel of 12 arrays and 2 scalars
launched by :class:`~taskbfs.kernels._gpu_launch.CupyLaunchedKernel` (its parameters in
one buffer handed to the driver) against the same PTX launched by CuPy's own call with
numba's argument ABI one numpy scalar per parameter; microseconds per launch over a few
thousand launches of a trivial kernel (the host's cost, not the GPU's).

    python benchmarks/device/launch_cost.py
"""

from __future__ import annotations

import time

import numpy as np
from numba import cuda

from taskbfs.kernels._gpu_launch import _parameters, launched_by_cupy

LAUNCHES = 3000


@cuda.jit
def _write(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, n, value):
    i = cuda.grid(1)
    if i < n:
        a0[i] = value


def _one_scalar_per_parameter(value) -> list:
    """numba's ABI for ``value`` as numpy scalars, as CuPy's own call takes them."""
    if isinstance(value, int):
        return [np.int64(value)]
    pointer = value.device_ctypes_pointer.value
    return [np.uint64(0), np.uint64(0), np.int64(value.size), np.int64(value.dtype.itemsize),
            np.uint64(pointer), np.int64(value.size), np.int64(value.dtype.itemsize)]


def main() -> None:
    arrays = [cuda.to_device(np.zeros(1 << 16, np.int64)) for _ in range(12)]
    kernel = launched_by_cupy(_write)
    kernel[64, 256](*arrays, 1000, 3)
    cuda.synchronize()
    start = time.perf_counter()
    for k in range(LAUNCHES):
        kernel[64, 256](*arrays, 1000, k)
    cuda.synchronize()
    packed = (time.perf_counter() - start) / LAUNCHES * 1e6
    argtypes = tuple(_parameters(a, _write)[0] for a in (*arrays, 1000, 3))
    function = kernel._functions[tuple(map(id, argtypes))][1].function  # keyed by the types' ids
    start = time.perf_counter()
    for k in range(LAUNCHES):
        flat = [p for v in (*arrays, 1000, k) for p in _one_scalar_per_parameter(v)]
        function((64,), (256,), tuple(flat))
    cuda.synchronize()
    each = (time.perf_counter() - start) / LAUNCHES * 1e6
    print(f"a launch of 12 arrays and 2 scalars: {packed:.1f} us with one parameter buffer, "
          f"{each:.1f} us with CuPy's call converting each parameter")


if __name__ == "__main__":
    main()

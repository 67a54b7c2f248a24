"""Kernel launches at CuPy's cost: a numba.cuda kernel, compiled by numba for the types of
the arguments it is given, loaded once as PTX into CuPy and launched by CuPy from then on.

numba checks and wraps every argument in Python at each launch, which costs several times
what CuPy's launch of the same PTX does; a level of a search launches a handful of
kernels, so that cost is a level's floor. The kernels stay numba kernels: one source, run
by the CUDA simulator in CI (where, as without CuPy, :func:`launched_by_cupy` leaves a
kernel to numba's own launch).

Arguments are passed as numba passes them (its kernel ABI): an array as meminfo, parent,
item count, item size, data pointer, shape and strides; a scalar as itself, a boolean as
one byte. Each parameter sits in an 8-byte slot of one buffer whose slot addresses go to
the driver's launch (``kernelParams``): a launch costs a few numpy calls, whatever its
number of parameters.
"""

from __future__ import annotations

import functools
import os
import re
import struct
import tempfile
import weakref
from dataclasses import dataclass

import numpy as np
from numba import config as numba_config
from numba import cuda, types
from numba.np import numpy_support


def launched_by_cupy(kernel):
    """``kernel`` (a ``cuda.jit`` kernel) as an object launched the same way,
    ``k[blocks, threads](*args)``, by CuPy where it can: on a real GPU with CuPy
    installed; otherwise ``kernel`` itself."""
    if cupy_module() is None:
        return kernel
    return CupyLaunchedKernel(kernel)


@functools.cache
def cupy_module():
    """The cupy module where kernels are launched by CuPy (a real GPU, CuPy installed),
    else None (not installed, or the CUDA simulator is on)."""
    if numba_config.ENABLE_CUDASIM:
        return None
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def require_cupy(what: str):
    """The cupy module for ``what`` (a feature that hands out CuPy arrays), else
    :class:`~taskbfs.errors.DeviceUnavailableError` saying so (CuPy not installed, or
    the CUDA simulator is on: it has no CuPy)."""
    cupy = cupy_module()
    if cupy is None:
        from taskbfs.errors import DeviceUnavailableError

        why = ("the CUDA simulator is on (NUMBA_ENABLE_CUDASIM)" if numba_config.ENABLE_CUDASIM
               else "CuPy is not installed here (pip install cupy-cuda12x)")
        raise DeviceUnavailableError(f"{what} needs CuPy and a GPU, but {why}")
    return cupy


class CupyLaunchedKernel:
    """A numba kernel launched by CuPy: its PTX for each tuple of argument types, loaded
    on the first launch with those types, launched through the driver with all of its
    parameters in one buffer (CuPy's own call converts each of a launch's ~100
    parameters in turn)."""

    def __init__(self, kernel):
        self.kernel = kernel
        self._functions = {}

    def __getitem__(self, config):
        blocks, threads = config
        return functools.partial(self._launch, int(blocks), int(threads))

    def _launch(self, blocks: int, threads: int, *args) -> None:
        argtypes, words = [], []
        for value in args:
            argtype, params = _parameters(value, self.kernel)
            argtypes.append(argtype)
            words += params
        # numba interns its types (one object per type) and the entry keeps them alive:
        # their ids are a key that hashes at a fraction of the cost of the types
        key = tuple(map(id, argtypes))
        loaded = self._functions.get(key)
        if loaded is None:
            argtypes = tuple(argtypes)
            loaded = self._functions[key] = (argtypes, self._load(argtypes))
        function = loaded[1]
        cupy = cupy_module()
        values = np.array(words, dtype=np.uint64)  # one 8-byte slot per parameter
        pointers = _slot_offsets(values.size) + np.uint64(values.ctypes.data)
        cupy.cuda.driver.launchKernel(function.pointer, blocks, 1, 1, threads, 1, 1, 0,
                                      cupy.cuda.get_current_stream().ptr,
                                      pointers.ctypes.data, 0)

    def _load(self, argtypes: tuple) -> _Loaded:
        """This kernel compiled by numba for ``argtypes``, loaded by CuPy."""
        self.kernel.compile(argtypes)
        ptx = self.kernel.inspect_asm(argtypes)
        entry = re.search(r"\.entry\s+([\w$.]+)\s*\(", ptx).group(1)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "kernel.ptx")
            with open(path, "w") as out:
                out.write(ptx)
            function = cupy_module().RawModule(path=path).get_function(entry)
        # a RawKernel holds its driver function (CUfunction) as ``kernel``
        driver_function = getattr(function, "kernel", function)
        return _Loaded(function, int(driver_function.ptr))


@dataclass(frozen=True)
class _Loaded:
    """A kernel loaded by CuPy (kept: its module stays loaded) and its CUfunction."""

    function: object
    pointer: int


@functools.cache
def _slot_offsets(count: int) -> np.ndarray:
    """Byte offsets of ``count`` 8-byte parameter slots (the driver reads each parameter
    from the start of its slot: little-endian, a narrower one from its low bytes)."""
    return np.arange(count, dtype=np.uint64) * np.uint64(8)


#: A device array's numba type and kernel parameters, while the array lives: the arrays a
#: search launches its kernels with live as long as the search, and their parameters do
#: not change.
_ARRAYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_WORD = (1 << 64) - 1


def _parameters(value, kernel) -> tuple:
    """``(numba type, kernel parameters)`` of one kernel argument (numba's ABI), each
    parameter as the unsigned 64-bit word that holds its bytes."""
    if isinstance(value, (bool, np.bool_)):
        return types.boolean, [int(bool(value))]
    if isinstance(value, int):
        return types.int64, [value & _WORD]
    if isinstance(value, float):
        return types.float64, [_float_word(value, "<d")]
    if isinstance(value, np.integer):
        return _scalar_type(value.dtype), [int(value) & ((1 << 8 * value.itemsize) - 1)]
    if isinstance(value, np.floating):
        fmt = "<d" if value.itemsize == 8 else "<f"
        return _scalar_type(value.dtype), [_float_word(float(value), fmt)]
    try:
        return _ARRAYS[value]
    except KeyError:
        pass
    except TypeError:  # not weakly referable: described at each launch
        return _array_parameters(value, kernel)
    entry = _ARRAYS[value] = _array_parameters(value, kernel)
    return entry


#: numba's type of a numpy scalar's dtype, asked of numba once per dtype.
_scalar_type = functools.cache(numpy_support.from_dtype)


def _float_word(value: float, fmt: str) -> int:
    """The bytes of ``value`` packed as ``fmt`` (a float or a double), as an integer."""
    return int.from_bytes(struct.pack(fmt, value), "little")


def _array_parameters(value, kernel) -> tuple:
    if not cuda.is_cuda_array(value):
        raise TypeError(f"a kernel launched by CuPy takes device arrays, got {type(value)}")
    argtype = kernel.typeof_pyval(value)  # as numba types it for its own launch
    # numba's own device arrays as they are; others (CuPy's) through their interface
    view = value if hasattr(value, "device_ctypes_pointer") else cuda.as_cuda_array(value)
    pointer = view.device_ctypes_pointer.value or 0
    params = [0, 0, int(view.size), int(view.dtype.itemsize), int(pointer)]
    params += [int(s) & _WORD for s in view.shape]
    params += [int(s) & _WORD for s in view.strides]
    return argtype, params

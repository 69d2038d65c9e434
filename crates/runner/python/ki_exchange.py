"""Device memory shared between a solution worker and the judge (CUDA IPC, driver API by ctypes).

The solution worker copies the outputs it is asked to have checked into an exchange buffer it
allocated with cuMemAlloc; the judge maps that buffer (cuIpcOpenMemHandle) and compares it with
references that never enter the solution's process. Only a 64-byte handle, offsets and a digest of
each copied region travel: the judge recomputes the digest on what it mapped, so bytes lost in
transit are a harness error, never the solution's.

A buffer the judge may still map is never freed: freeing exported memory before the importer
closes it is undefined behaviour (CUDA driver API, cuIpcOpenMemHandle), so a worker that needs a
larger exchange keeps the old one until it exits.
"""

import ctypes

import torch

_CUDA = ctypes.CDLL("libcuda.so.1")
_CUdeviceptr = ctypes.c_ulonglong


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


_CUDA_ERROR_OUT_OF_MEMORY = 2


class OutOfMemory(RuntimeError):
    pass


def _check(result, what):
    if result != 0:
        name = ctypes.c_char_p()
        _CUDA.cuGetErrorName(result, ctypes.byref(name))
        kind = OutOfMemory if result == _CUDA_ERROR_OUT_OF_MEMORY else RuntimeError
        raise kind(f"{what}: CUDA driver error {result} ({(name.value or b'?').decode()})")


def _ensure_context():
    torch.cuda.init()
    torch.empty(1, device="cuda")  # the primary context is current on this thread from here on
    ctx = ctypes.c_void_p()
    _check(_CUDA.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    if not ctx.value:
        dev = ctypes.c_int()
        _check(_CUDA.cuDeviceGet(ctypes.byref(dev), torch.cuda.current_device()), "cuDeviceGet")
        _check(_CUDA.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        _check(_CUDA.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


_DIGEST_CHUNK = 1 << 22
_DIGEST_MODULUS = 65521


def digest(region):
    """Sum over i of byte[i] * (i mod 65521 + 1) of a 1-D uint8 CUDA tensor: equal on both sides of
    the exchange when the judge reads what the worker wrote (a change or a shift of any byte moves it)."""
    total = torch.zeros((), dtype=torch.int64, device=region.device)
    for start in range(0, region.numel(), _DIGEST_CHUNK):
        chunk = region[start : start + _DIGEST_CHUNK].to(torch.int64)
        weights = torch.arange(start, start + chunk.numel(), dtype=torch.int64, device=region.device)
        total += (chunk * weights.remainder_(_DIGEST_MODULUS).add_(1)).sum()
    return int(total.item())


class _Interface:
    """Just enough of __cuda_array_interface__ for torch.as_tensor to view raw device memory."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 2}


def view(ptr, nbytes):
    return torch.as_tensor(_Interface(ptr, nbytes), device="cuda")


class Exported:
    """A buffer this process allocated and exports."""

    def __init__(self, nbytes):
        _ensure_context()
        self.nbytes = int(nbytes)
        self.ptr = _CUdeviceptr()
        _check(_CUDA.cuMemAlloc_v2(ctypes.byref(self.ptr), ctypes.c_size_t(self.nbytes)), "cuMemAlloc")
        handle = _IpcHandle()
        _check(_CUDA.cuIpcGetMemHandle(ctypes.byref(handle), self.ptr), "cuIpcGetMemHandle")
        self.handle_hex = ctypes.string_at(ctypes.addressof(handle), 64).hex()  # .reserved stops at the first NUL
        self.tensor = view(self.ptr.value, self.nbytes)

    def free(self):
        if self.ptr.value:
            torch.cuda.synchronize()
            _CUDA.cuMemFree_v2(self.ptr)
            self.ptr = _CUdeviceptr()


class Imported:
    """A buffer another process exported, mapped here."""

    def __init__(self, handle_hex, nbytes):
        _ensure_context()
        raw = bytes.fromhex(handle_hex)
        if len(raw) != 64:
            raise ValueError("an IPC handle is 64 bytes")
        handle = _IpcHandle()
        ctypes.memmove(ctypes.byref(handle), raw, 64)
        self.ptr = _CUdeviceptr()
        _check(_CUDA.cuIpcOpenMemHandle_v2(ctypes.byref(self.ptr), handle, ctypes.c_uint(1)), "cuIpcOpenMemHandle")
        self.nbytes = int(nbytes)
        self.tensor = view(self.ptr.value, self.nbytes)

    def close(self):
        if self.ptr.value:
            torch.cuda.synchronize()
            _CUDA.cuIpcCloseMemHandle(self.ptr)
            self.ptr = _CUdeviceptr()

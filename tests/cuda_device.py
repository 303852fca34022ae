"""Whether this machine has a CUDA device, asked of the driver directly (no
snug code involved), for the test runners' `gpu` modes."""
import ctypes


def no_device_reason():
    """Why there is no CUDA device to run on, or None when there is one."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "libcuda.so.1 not found (no NVIDIA driver)"
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return "the CUDA driver does not initialise"
    return None if count.value > 0 else "the driver sees no device"

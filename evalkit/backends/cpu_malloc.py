"""Keep large tensor buffers in the C heap between forward passes on CPU.

glibc serves every allocation above its mmap threshold (128 KiB at start, raised dynamically only
up to what has been freed) with a fresh ``mmap``, and gives it back with ``munmap`` when freed. A
transformer forward on CPU allocates and frees activation tensors of tens of MB in every layer, so
each one is faulted in page by page and zeroed by the kernel: the bundled model's 2,048-token
windows score ~1.4x faster without that (``bench/bench_hf_malloc.py``). Raising the threshold to its
maximum and keeping freed memory in the heap lets those buffers be reused. Nothing numerical
changes. Only glibc has ``mallopt``; elsewhere (musl, macOS, Windows) this does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MMAP_THRESHOLD = 32 * 2 ** 20  # glibc's largest allowed value on 64-bit (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD = 2 ** 30       # free heap memory kept before it is returned to the system
TOP_PAD = 256 * 2 ** 20        # heap growth per brk call
_done = False


def keep_buffers_in_heap() -> bool:
    """Tune glibc's allocator once per process, unless ``EVALKIT_MALLOC_TUNING=0``; returns whether
    it is tuned. Safe to call from any backend: it only changes where freed memory waits."""
    global _done
    if _done or os.environ.get("EVALKIT_MALLOC_TUNING", "1").lower() in ("0", "false", "no"):
        return _done
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = all(mallopt(param, value) == 1 for param, value in
             ((M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_TOP_PAD, TOP_PAD)))
    if not ok:
        log.debug("mallopt refused a setting; allocator left as it was")
    _done = ok
    return ok

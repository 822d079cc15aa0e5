"""The paper's C loop: source, compiler discovery, compile and load (ctypes)."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

C_SOURCE = r"""
#include <stddef.h>
#include <stdint.h>

/* The paper's loop, with every distance consumed (summed). */
int64_t hamming_sum(const uint64_t *codes, size_t n, uint64_t q) {
    int64_t s = 0;
    for (size_t i = 0; i < n; i++) s += __builtin_popcountll(q ^ codes[i]);
    return s;
}

/* PHD on stored NOT item codes: one AND and one popcount. */
int64_t phd_sum(const uint64_t *codes, size_t n, uint64_t q) {
    int64_t s = 0;
    for (size_t i = 0; i < n; i++) s += __builtin_popcountll(q & codes[i]);
    return s;
}

/* The released pattern: each distance overwrites the last and none is used,
   so an optimising compiler may delete the loop. */
int64_t hamming_overwrite(const uint64_t *codes, size_t n, uint64_t q) {
    int64_t d = 0;
    for (size_t i = 0; i < n; i++) d = __builtin_popcountll(q ^ codes[i]);
    (void)d;
    return 0;
}
"""


@dataclass
class CLoop:
    """The C loop compiled at run time and loaded with ctypes."""

    compiler: str
    version: str
    flags: list
    lib: object

    def call(self, name: str, codes: np.ndarray, q: int) -> int:
        """Run ``name`` over uint64 ``codes`` (n,) or (n, 1), query word ``q``."""
        flat = codes.reshape(-1)
        return int(getattr(self.lib, name)(flat.ctypes.data, flat.shape[0], int(q)))


def find_compiler() -> str | None:
    """The system C compiler: ``$CC``, else ``cc``, ``gcc`` or ``clang`` on PATH."""
    for cand in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cand and shutil.which(cand):
            return shutil.which(cand)
    return None


def compile_c(flags=("-O3", "-march=native")) -> tuple[CLoop | None, str]:
    """Compile :data:`C_SOURCE` into a shared library; ``(None, why)`` if impossible."""
    cc = find_compiler()
    if cc is None:
        return None, "no C compiler found ($CC, cc, gcc, clang): the C loop is skipped"
    tmp = Path(tempfile.mkdtemp(prefix="phd-bench-c-"))
    try:
        src, lib = tmp / "loop.c", tmp / "loop.so"
        src.write_text(C_SOURCE)
        cmd = [cc, *flags, "-shared", "-fPIC", "-o", str(lib), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            return None, f"C compile failed ({' '.join(cmd)}): {proc.stderr.strip()[:500]}"
        handle = ctypes.CDLL(str(lib))
        for name in ("hamming_sum", "phd_sum", "hamming_overwrite"):
            fn = getattr(handle, name)
            fn.restype = ctypes.c_int64
            fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64]
        ver = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
        return CLoop(cc, ver.splitlines()[0] if ver else "?", list(flags), handle), ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

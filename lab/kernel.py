"""The browser kernel's source and the data it needs, packed from the numerical core.

``lab/static/kernel.js`` is the only browser-side arithmetic in the project. The
served lab and the exported page both ship it with :func:`kernel_data`, whose
uniforms are the core's own float32 rollout uniforms, so the browser realises
exactly the groups :func:`sims.scenario.evaluate` realises.
"""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np

from grpo_lab.sims.population import UNIFORM_BLOCK, Population

KERNEL_PATH = Path(__file__).with_name("static") / "kernel.js"
K_MAX = UNIFORM_BLOCK  #: the largest K the browser kernel can show (one block of uniforms)


def kernel_source() -> str:
    """The JavaScript source of the browser kernel (defines ``window.grpoKernel``)."""
    return KERNEL_PATH.read_text(encoding="utf-8")


def kernel_arrays(population: Population, gain: float) -> dict:
    """``p0`` (float64, N), ``u`` (float32, N * K_MAX, row-major), ``stride`` and ``gain`` as numpy arrays."""
    u = np.ascontiguousarray(population.uniforms(K_MAX), dtype=np.float32)
    return {"p0": np.ascontiguousarray(population.pass_rates, dtype=np.float64), "u": u.ravel(),
            "stride": K_MAX, "gain": float(gain)}


def b64(array, dtype: str) -> str:
    """``array`` as ``dtype`` (a little-endian numpy type such as ``"<f8"``), base64: how typed arrays reach
    the browser (``atob`` and a typed-array view over the bytes)."""
    return base64.b64encode(np.ascontiguousarray(array, dtype=dtype).tobytes()).decode()


def kernel_data_b64(population: Population, gain: float) -> dict:
    """The same, with the arrays as little-endian base64 strings (for embedding in a page)."""
    arr = kernel_arrays(population, gain)
    return {"p0": b64(arr["p0"], "<f8"), "u": b64(arr["u"], "<f4"), "stride": arr["stride"], "gain": arr["gain"]}

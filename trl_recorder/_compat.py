"""The TRL versions this integration is tested against, and the one-line check."""

from __future__ import annotations

from grpo_lab.sims.errors import InputError

__all__ = ["SUPPORTED_TRL", "check_trl", "supported"]

SUPPORTED_TRL = (">=1.16", "<1.17")  #: the range pinned in the ``trl`` extra (tested: trl 1.16.0)
_LOW, _HIGH = (1, 16), (1, 17)


def _parse(version: str) -> tuple[int, int]:
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit()) or "0"
        parts.append(int(digits))
    return tuple(parts + [0] * (2 - len(parts)))  # type: ignore[return-value]


def supported(version: str) -> bool:
    """Whether a TRL version string lies in :data:`SUPPORTED_TRL`."""
    return _LOW <= _parse(version) < _HIGH


def check_trl():
    """Import trl and return it; InputError (one line naming the range) if missing or unsupported."""
    want = f"trl{','.join(SUPPORTED_TRL)}"
    try:
        import trl
    except ImportError:
        raise InputError(f"the TRL integration needs {want} (pip install 'grpo-lab[trl]'); trl is not installed") from None
    if not supported(trl.__version__):
        raise InputError(f"the TRL integration supports {want}; found trl {trl.__version__}")
    return trl

"""The user's cache folder for things grpo-lab can recompute but would rather not: ``$GRPO_LAB_CACHE``, else
``$XDG_CACHE_HOME/grpo-lab``, else ``~/.cache/grpo-lab``. Holds the trainer's warm starts (``sft/``) and the
SmolLM2 model as loaded from its GGUF file (``smollm2/``). Deleting it only costs time."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    """The cache folder (see the module docstring); it need not exist."""
    root = os.environ.get("GRPO_LAB_CACHE") or os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                                            os.path.expanduser("~/.cache"), "grpo-lab")
    return Path(root)

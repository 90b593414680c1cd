"""Shipped warm starts: the supervised starting policy of a (regime, sft_seed), as weights with their hash.

The warm start (:mod:`grpo_lab.train.sft`) is deterministic on one machine, but its 500 Adam steps
amplify float rounding: the same torch, numpy and thread count on another CPU gave a broad start
evaluating 0.4735 instead of 0.4700. So the starts the study and the shipped records use are shipped
as weights, in ``runs/warmstarts/`` (``grpo_lab/runs/warmstarts`` once installed):

- one ``{regime}-sft{seed}.npz`` per start: float32 arrays of the model's state dict (the head, tied
  to the token embedding, left out), written with fixed zip timestamps so the same weights give the
  same bytes;
- ``manifest.json``: per file the regime, the seed, every setting the start depends on
  (:data:`SETTINGS`) and the file's SHA-256.

:func:`shipped` finds the entry of a config: its ``start`` regime and ``warm_start_seed``, with every
setting of :data:`SETTINGS` equal to the entry's; a config that differs in any (a tiny test model,
other ``sft_steps``) computes its start as before. :func:`load` checks the file's SHA-256 against the
manifest first: a mismatch is one :class:`~grpo_lab.sims.errors.InputError` naming the file.
``benchmarks/make_warmstarts.py`` regenerates the files and the manifest.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np

from grpo_lab.sims.errors import InputError

MANIFEST = "manifest.json"
FORMAT = "grpo-lab-warmstarts"
#: the config settings a warm start depends on (besides its regime and seed), checked before a shipped one is used
SETTINGS = ("sft_steps", "sft_batch_size", "sft_learning_rate", "sft_digit_weights", "n_layer", "n_head", "n_embd")
TIED = "head.weight"  #: the state-dict key tied to ``tok.weight``: not stored, restored from it
SHIPPED = (("broad", 0), ("broad", 1), ("broad", 2), ("weak", 0), ("weak", 1), ("weak", 2))  #: what runs/ ships


def folder() -> Path:
    """Where the shipped warm starts live (beside the shipped runs)."""
    from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR

    return DEFAULT_RUNS_DIR / "warmstarts"


def file_name(regime: str, sft_seed: int) -> str:
    return f"{regime}-sft{sft_seed}.npz"


def settings(cfg) -> dict:
    """The :data:`SETTINGS` of ``cfg`` as JSON values (tuples as lists)."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in ((k, getattr(cfg, k)) for k in SETTINGS)}


def read_manifest(where: Path | None = None) -> dict:
    """``{file name: entry}`` of the manifest in ``where`` (default :func:`folder`); {} when there is none."""
    path = (where or folder()) / MANIFEST
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the warm-start manifest {str(path)!r}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        raise InputError(f"{str(path)!r} is not a warm-start manifest (format {FORMAT!r})")
    return data["files"]


def shipped(cfg, where: Path | None = None) -> Path | None:
    """The shipped file of ``cfg``'s warm start, or None when none matches its regime, seed and settings."""
    name = file_name(cfg.start, cfg.warm_start_seed)
    entry = read_manifest(where).get(name)
    if entry is None or entry.get("settings") != settings(cfg):
        return None
    return (where or folder()) / name


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def npz_bytes(state: dict) -> bytes:
    """The .npz bytes of ``state`` (name -> array; float32, sorted names, fixed timestamps: reproducible)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for k in sorted(state):
            arr = io.BytesIO()
            np.lib.format.write_array(arr, np.ascontiguousarray(np.asarray(state[k], dtype=np.float32)),
                                      allow_pickle=False)
            z.writestr(zipfile.ZipInfo(k + ".npy", date_time=(1980, 1, 1, 0, 0, 0)), arr.getvalue(),
                       compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def state_arrays(model) -> dict:
    """The model's state dict as float32 numpy arrays, the tied head left out."""
    return {k: v.detach().cpu().numpy().astype(np.float32) for k, v in model.state_dict().items() if k != TIED}


def load(model, path: Path, where: Path | None = None) -> str:
    """Load the shipped warm start ``path`` into ``model`` after checking its SHA-256 against the manifest;
    returns the hash. A missing, altered or unreadable file raises InputError."""
    import torch

    path = Path(path)
    entry = read_manifest(where or path.parent).get(path.name)
    if entry is None:
        raise InputError(f"warm start {str(path)!r} is not listed in its {MANIFEST}")
    try:
        digest = sha256(path)
    except OSError as exc:
        raise InputError(f"cannot read warm start {str(path)!r}: {exc.strerror}") from None
    if digest != entry.get("sha256"):
        raise InputError(f"warm start {str(path)!r} does not match its manifest: SHA-256 {digest[:16]}..., "
                         f"manifest {str(entry.get('sha256'))[:16]}...; regenerate it with benchmarks/make_warmstarts.py")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        ref = model.state_dict()
        state = {k: torch.from_numpy(arrays[k if k != TIED else "tok.weight"]).to(ref[k].device, ref[k].dtype)
                 for k in ref}
        model.load_state_dict(state)
    except (KeyError, ValueError, RuntimeError, OSError, zipfile.BadZipFile) as exc:
        raise InputError(f"warm start {str(path)!r} does not fit the model: {type(exc).__name__}: {exc}") from None
    return digest

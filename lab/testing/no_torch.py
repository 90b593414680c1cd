"""Python code that makes ``import torch`` fail in the interpreter it runs in, for the tests of what works without
torch (``python -c NO_TORCH + code``): :data:`NO_TORCH`."""

from __future__ import annotations

__all__ = ["NO_TORCH"]

NO_TORCH = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == 'torch' or name.startswith('torch.'):
            raise ImportError('torch is blocked in this test')
sys.meta_path.insert(0, Block())
"""

"""A tiny causal transformer (nanoGPT-shaped: pre-norm blocks, learned positions, tied embeddings).

:meth:`TinyGPT.forward` scores whole sequences (training, log-probabilities);
:meth:`TinyGPT.decode` runs new tokens against a key/value cache of the earlier ones, so
sampling L tokens after a prompt of P costs P + L token positions instead of
P + (P + 1) + ... + (P + L - 1).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x: torch.Tensor, past=None):
        """Block output for ``x`` (B, T, C); with ``past`` = (k, v) of the earlier positions, also the new (k, v).

        Without ``past`` the attention is causal over ``x`` and only the output is returned.
        """
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        if past is not None and past[0] is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        # new tokens see every cached position; among themselves, causally (one new token: no mask needed)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        x = x + self.mlp(self.ln2(x))
        return x if past is None else (x, (k, v))


class TinyGPT(nn.Module):
    """Token + position embeddings, ``n_layer`` blocks, a final norm and a head tied to the embedding."""

    def __init__(self, vocab_size: int, block_size: int, n_layer: int = 2, n_head: int = 4, n_embd: int = 64):
        super().__init__()
        self.block_size = block_size
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.head.weight = self.tok.weight
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def _check_length(self, T: int) -> None:
        if T > self.block_size:
            raise ValueError(f"sequence of {T} tokens exceeds the model's block size ({self.block_size} positions)")

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits of shape (B, T, vocab) for token ids ``idx`` of shape (B, T)."""
        T = idx.shape[1]
        self._check_length(T)
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def decode(self, idx: torch.Tensor, cache: list | None = None):
        """Logits (B, T, vocab) of new tokens ``idx`` (B, T) after the cached ones, and the grown cache.

        ``cache`` is None for the first call (then ``idx`` is the whole prefix, attended causally);
        later calls pass one new token per row (T = 1). Same function as :meth:`forward` on the
        concatenated sequence, up to floating-point rounding.
        """
        start = 0 if cache is None else cache[0][0].shape[2]
        T = idx.shape[1]
        self._check_length(start + T)
        x = self.tok(idx) + self.pos(torch.arange(start, start + T, device=idx.device))
        new = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, (None, None) if cache is None else cache[i])
            new.append(kv)
        return self.head(self.ln_f(x)), new

"""The embedded Qwen2's forward, op for op as transformers' eager path, in the pieces pcbench reuses.

transformers runs every position of every layer and grows its KV cache by concatenation; the
callers here need less: the PPO update runs each prompt once (prefix.py), the exact evaluation
needs the logits of a few positions (last_logits), and decoding writes each step's keys and values
into a preallocated buffer (KVBuffer). Each computes a kept position's floats exactly as the full
forward does under pcbench's products, where a product row does not depend on the other rows
(pcbench/detmm.py); tests/embedded/test_prefix.py and test_sampler_and_task.py check it bit for bit.
"""

from __future__ import annotations

import torch
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.qwen2.modeling_qwen2 import apply_rotary_pos_emb, eager_attention_forward


def additive_mask(key_valid: torch.Tensor, q_len: int, dtype) -> torch.Tensor:
    """key_valid (B, S) with the queries at the last q_len key positions -> (B, 1, q_len, S),
    0 where a query may attend (key valid and not in its future), the dtype's minimum elsewhere:
    transformers' eager mask."""
    S = key_valid.shape[1]
    causal = torch.arange(S)[None, :] <= torch.arange(S - q_len, S)[:, None]  # (q_len, S)
    allowed = causal[None] & key_valid.bool()[:, None, :]  # (B, q_len, S)
    zero, low = torch.tensor(0.0, dtype=dtype), torch.tensor(torch.finfo(dtype).min, dtype=dtype)
    return torch.where(allowed, zero, low)[:, None]


class Past:
    """Keys and values (B, kv_heads, S, d) that a call's own go after (concatenated)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor):
        self.keys, self.values = keys, values

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.cat([self.keys, k], dim=2), torch.cat([self.values, v], dim=2)


def layer_forward(layer, h, cos, sin, mask, past=None, last=None):
    """One decoder layer on h (B, L, H). past: what this call's keys and values go after (a Past or a
    KVBuffer slot); last: compute only the last `last` positions' outputs (every position still gives
    its key and value; mask is then (B, 1, last, S)). -> new h (B, last or L, H), and this call's
    (keys, values) after rotary."""
    attn = layer.self_attn
    x = layer.input_layernorm(h)
    xq = x if last is None else x[:, -last:]
    q = attn.q_proj(xq).view(*xq.shape[:-1], -1, attn.head_dim).transpose(1, 2)  # (B, heads, Lq, d)
    k = attn.k_proj(x).view(*x.shape[:-1], -1, attn.head_dim).transpose(1, 2)  # (B, kv_heads, L, d)
    v = attn.v_proj(x).view(*x.shape[:-1], -1, attn.head_dim).transpose(1, 2)
    if last is None:
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
    else:  # the same elementwise formula, with the query positions' own angles
        q, k = apply_rotary_pos_emb(q, q, cos[:, -last:], sin[:, -last:])[0], apply_rotary_pos_emb(k, k, cos, sin)[1]
    own = (k, v)
    if past is not None:
        k, v = past.extend(k, v)
    # the model's own eager attention: pcbench/detmm.py's products unless PCBENCH_NUMERICS=native
    attend = ALL_ATTENTION_FUNCTIONS.get_interface(attn.config._attn_implementation, eager_attention_forward)
    out, _ = attend(attn, q, k, v, mask, scaling=attn.scaling)
    h = (h if last is None else h[:, -last:]) + attn.o_proj(out.reshape(*xq.shape[:-1], -1).contiguous())
    h = h + layer.mlp(layer.post_attention_layernorm(h))
    return h, own


def packed_layer_forward(layer, h, cos, sin, mask, idx, rows: int, length: int, past):
    """One decoder layer on packed tokens: h (P, H) are the positions idx (P,) of a (rows, length)
    layout, cos / sin (P, d) theirs. Every product, norm and MLP runs on the P tokens only; the
    attention runs on the (rows, length) layout, the positions not in idx zero keys and values that
    the mask must hide from every kept query. -> new h (P, H). A kept token's floats are the padded
    layout's: a product row does not depend on the others (pcbench/detmm.py), and a masked key's
    weight is exactly 0 whatever its value."""
    attn = layer.self_attn
    x = layer.input_layernorm(h)
    P, d = x.shape[0], attn.head_dim
    q = attn.q_proj(x).view(P, -1, d)  # (P, heads, d)
    k = attn.k_proj(x).view(P, -1, d)  # (P, kv_heads, d)
    v = attn.v_proj(x).view(P, -1, d)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)  # the angles broadcast over the heads (dim 1)

    def unpack(t):  # (P, heads, d) -> (rows, heads, length, d), zeros where no token
        full = t.new_zeros(rows * length, *t.shape[1:]).index_copy(0, idx, t)
        return full.view(rows, length, *t.shape[1:]).transpose(1, 2)

    q, k, v = unpack(q), unpack(k), unpack(v)
    k, v = past.extend(k, v)
    attend = ALL_ATTENTION_FUNCTIONS.get_interface(attn.config._attn_implementation, eager_attention_forward)
    out, _ = attend(attn, q, k, v, mask, scaling=attn.scaling)  # (rows, length, heads, d)
    h = h + attn.o_proj(out.reshape(rows * length, -1)[idx])
    return h + layer.mlp(layer.post_attention_layernorm(h))


def last_logits(model, ids: torch.Tensor, attn: torch.Tensor, pos: torch.Tensor, last: int) -> torch.Tensor:
    """ids, attn, pos (N, L) -> (N, last, V): the logits at the last `last` positions only, the
    floats model(ids, attn, pos).logits[:, -last:] gives under pcbench's products.

    A causal model's earlier positions feed the last ones only through their keys and values,
    so the final layer runs its queries, output projection and MLP on `last` positions instead of
    L (an exact evaluation of the default task: 5-9 of 12-21); the attention sees the same keys
    under the same mask."""
    core = model.model
    h = core.embed_tokens(ids)
    cos, sin = core.rotary_emb(h, pos)
    mask = additive_mask(attn, ids.shape[1], h.dtype)  # (N, 1, L, L)
    for i, layer in enumerate(core.layers):
        final = i == len(core.layers) - 1
        h, _ = layer_forward(layer, h, cos, sin, mask[:, :, -last:] if final else mask, last=last if final else None)
    return model.lm_head(core.norm(h))


class KVBuffer:
    """Every layer's keys and values for decoding, preallocated: (B, kv_heads, L + T, d) each, the
    prompt's L filled by the prefill, one position written per decode step, the rest zeros.

    transformers' cache concatenates at every step (a copy of the whole cache per layer and step).
    Here each step attends over the whole buffer, the positions not yet written masked: a masked
    key's weight is exactly 0 and its value 0, so every score, weight and output is the float the
    shorter key set gives (the softmax sums the same terms lane by lane, plus zeros; checked bit for
    bit in tests/embedded/test_sampler_and_task.py). A view of the written part would read the same
    floats but, strided, costs the attention products 2-3x (measured: 1,536 rows)."""

    def __init__(self, prompt_kv: list[tuple[torch.Tensor, torch.Tensor]], row: torch.Tensor, steps: int):
        """prompt_kv: per layer (U, kv_heads, L, d) of the U distinct prompts; row (B,): each row's prompt."""
        self.filled = prompt_kv[0][0].shape[2]
        self.kv = []
        for k, v in prompt_kv:
            U, H, L, d = k.shape
            K, V = k.new_zeros(U, H, L + steps, d), v.new_zeros(U, H, L + steps, d)
            K[:, :, :L], V[:, :, :L] = k, v
            self.kv.append((K[row], V[row]))  # one copy per row of its prompt's buffer

    @property
    def size(self) -> int:
        return self.kv[0][0].shape[2]

    def keep(self, rows: torch.Tensor) -> None:
        """Only these rows (indices into the current ones) decode on."""
        self.kv = [(K[rows], V[rows]) for K, V in self.kv]

    def slot(self, i: int) -> "_Slot":
        return _Slot(self, i)


class _Slot:
    """Layer i's place in a KVBuffer for one decode step: writes the step's keys and values at the
    next position, -> the whole buffer's keys and values."""

    def __init__(self, buf: KVBuffer, i: int):
        self.buf, self.i = buf, i

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        K, V = self.buf.kv[self.i]
        at = self.buf.filled
        K[:, :, at:at + 1], V[:, :, at:at + 1] = k, v
        return K, V


def prefill(model, ids: torch.Tensor, attn: torch.Tensor, pos: torch.Tensor):
    """ids, attn, pos (U, L) -> each layer's (keys, values) (U, kv_heads, L, d) and the last position's
    logits (U, V)."""
    core = model.model
    h = core.embed_tokens(ids)
    cos, sin = core.rotary_emb(h, pos)
    mask = additive_mask(attn, ids.shape[1], h.dtype)
    kv = []
    for layer in core.layers:
        h, own = layer_forward(layer, h, cos, sin, mask)
        kv.append(own)
    return kv, model.lm_head(core.norm(h[:, -1:]))[:, 0]


def decode_step(model, buf: KVBuffer, ids: torch.Tensor, pos: torch.Tensor, key_valid: torch.Tensor) -> torch.Tensor:
    """One token per row: ids, pos (A, 1), key_valid (A, filled + 1) -> logits (A, V); the step's keys
    and values are written into buf."""
    core = model.model
    h = core.embed_tokens(ids)
    cos, sin = core.rotary_emb(h, pos)
    valid = key_valid.new_zeros(key_valid.shape[0], buf.size)
    valid[:, :key_valid.shape[1]] = key_valid  # the positions not written yet: masked
    mask = additive_mask(valid, 1, h.dtype)  # (A, 1, 1, L + T)
    for i, layer in enumerate(core.layers):
        h, _ = layer_forward(layer, h, cos, sin, mask, past=buf.slot(i))
    buf.filled += 1
    return model.lm_head(core.norm(h))[:, -1]

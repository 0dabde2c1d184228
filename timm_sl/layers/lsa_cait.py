"""Locality Self-Attention for CaiT's talking-heads attention and class attention.

Talking-heads LSA: ``(temperature * q) k^T``, pre-softmax head mixing (``proj_l``), **then** ``-inf`` on the
diagonal, softmax, post-softmax mixing (``proj_w``). Masking before the pre-softmax mixing would feed ``-inf`` into a
linear map and give NaN (``-inf * 0``, ``-inf + inf``); the reference code overwrites the self score with ``-1e-9``
(about 0) before the mixing, which is no mask but still changes the output — not reproduced. Class attention (one
query, the class token) gets the learnable temperature only and no diagonal mask, as in the reference code: its only
"self" relation is the class token attending to itself among the patch tokens, which carries the summary being built.

Both classes also take an explicit ``head_dim`` (timm's derive it from the width): the paper's small-data CaiT has 4
heads of 64 (inner width 256) on a 192-wide model.
"""
from typing import Any, Dict, Optional

import torch
import torch.nn.functional as F
from torch import nn

from timm.layers import use_fused_attn
from timm.models.cait import ClassAttn, TalkingHeadAttn

from .lsa import LsaMixin, check_heads, lsa_attn_bias, mask_diagonal_

__all__ = ['LocalityTalkingHeadAttn', 'LocalityClassAttn', 'class_attn_switches', 'mix_heads']


def _resize_heads(module: nn.Module, dim: int, num_heads: int, head_dim: Optional[int], names: tuple) -> int:
    """Rebuild ``module``'s input projections (``names``) and ``proj`` for ``num_heads * head_dim`` inner width.

    timm's CaiT attention derives the head width from ``dim // num_heads`` and offers no argument for it; the
    projections it built are replaced here when another ``head_dim`` is asked for. Returns the head dim in use.
    """
    if head_dim is None or head_dim * num_heads == dim:
        return dim // num_heads
    inner = head_dim * num_heads
    for name in names:
        old = getattr(module, name)
        ratio = old.out_features // dim
        setattr(module, name, nn.Linear(dim, inner * ratio, bias=old.bias is not None,
                                        device=old.weight.device, dtype=old.weight.dtype))
    module.proj = nn.Linear(inner, dim, device=module.proj.weight.device, dtype=module.proj.weight.dtype)
    return head_dim


def mix_heads(
        attn: torch.Tensor,
        weight: torch.Tensor,
        bias: Optional[torch.Tensor] = None,
        extra_bias: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Talking-heads mixing: the Linear over heads ``(weight, bias)`` applied to ``(B, H, N, M)`` attention, plus an
    optional additive ``(N, M)`` term.

    The same map as ``F.linear(attn.permute(0, 2, 3, 1), weight, bias).permute(0, 3, 1, 2)``, computed as one batched
    ``(H, H)`` by ``(H, N * M)`` product on the contiguous attention: a Linear over a trailing dim of H (4 for small
    CaiT) would run a GEMM of inner size H over ``B * N * M`` rows between two permuting copies, several times
    slower. The sum over the H heads may round in another order (float32: within a few ulp).
    """
    B, H, N, M = attn.shape
    if bias is None:
        add = torch.zeros(1, 1, 1, dtype=attn.dtype, device=attn.device)
    else:
        add = bias.view(1, -1, 1)
    if extra_bias is not None:
        add = add + extra_bias.reshape(1, 1, N * M)
    mix = weight.to(attn.dtype).unsqueeze(0).expand(B, -1, -1)
    out = torch.baddbmm(add.to(attn.dtype), mix, attn.reshape(B, H, N * M))
    return out.view(B, weight.shape[0], N, M)


class LocalityTalkingHeadAttn(TalkingHeadAttn, LsaMixin):
    """timm's talking-heads attention with LSA (mask after the pre-softmax head mixing) and an optional head dim.

    timm's constructor plus ``head_dim`` (``None``: timm's ``dim // num_heads``) and the LSA switches ``diag_mask``,
    ``learn_temp``, ``temp_ratio`` of :class:`~timm_sl.layers.LsaMixin`. With ``diag_mask=False, learn_temp=False,
    temp_ratio=1`` it computes plain talking-heads attention (the baseline of a config whose head dim timm's class
    cannot express); its state dict then has exactly timm's keys.
    """

    def __init__(
            self,
            dim: int,
            num_heads: int = 8,
            qkv_bias: bool = False,
            attn_drop: float = 0.,
            proj_drop: float = 0.,
            head_dim: Optional[int] = None,
            diag_mask: bool = True,
            learn_temp: bool = True,
            temp_ratio: float = 1.0,
            device=None,
            dtype=None,
    ) -> None:
        check_heads(dim, num_heads, 0)  # the width need not split into the heads: _resize_heads sizes them
        super().__init__(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop,
                         device=device, dtype=dtype)
        self.head_dim = _resize_heads(self, dim, num_heads, head_dim, ('qkv',))
        # fast path: both head mixings as batched products (mix_heads); off (TIMM_FUSED_ATTN=0, attention capture)
        # the explicit path runs timm's proj_l / proj_w modules, as timm's TalkingHeadAttn does
        self.fused_attn = use_fused_attn()
        self.init_lsa(self.head_dim, diag_mask, learn_temp, temp_ratio, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.temperature.to(q.dtype).view(-1, 1, 1)
        attn = q @ k.transpose(-2, -1)
        # the diagonal mask goes in after the pre-softmax mixing: -inf must not pass through proj_l
        if self.fused_attn:  # the mask written into the mixed logits (baddbmm's backward does not read its output)
            attn = mix_heads(attn, self.proj_l.weight, self.proj_l.bias)
            if self.diag_mask:
                attn = mask_diagonal_(attn)
            attn = attn.softmax(dim=-1)
            attn = mix_heads(attn, self.proj_w.weight, self.proj_w.bias)
        else:  # explicit path: the mixing Linears run as modules (attention capture reads proj_w's input)
            attn = self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            if self.diag_mask:
                attn = attn + lsa_attn_bias(N, attn.dtype, attn.device)
            attn = attn.softmax(dim=-1)
            attn = self.proj_w(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, self.num_heads * self.head_dim)  # explicit width: B may be 0
        x = self.proj(x)
        x = self.proj_drop(x)
        return x

    def extra_repr(self) -> str:
        return f'num_heads={self.num_heads}, head_dim={self.head_dim}, {self.lsa_repr()}'


def class_attn_switches(lsa_kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The SL switches ``lsa_kwargs`` as class attention takes them: its temperature ones, never the mask."""
    return dict(lsa_kwargs, diag_mask=False)


class LocalityClassAttn(ClassAttn, LsaMixin):
    """timm's class attention with LSA's learnable per-head temperature and an optional head dim.

    timm's constructor plus ``head_dim`` and the temperature switches ``learn_temp``, ``temp_ratio``. It has no diagonal
    mask (see the module docstring: the reference applies none in class attention): ``diag_mask`` exists only for the
    LSA classes' common signature and must be False.

    Raises:
        ValueError: ``diag_mask=True`` (also through :func:`~timm_sl.layers.set_lsa_switches`).
    """

    def __init__(
            self,
            dim: int,
            num_heads: int = 8,
            qkv_bias: bool = False,
            attn_drop: float = 0.,
            proj_drop: float = 0.,
            head_dim: Optional[int] = None,
            diag_mask: bool = False,
            learn_temp: bool = True,
            temp_ratio: float = 1.0,
            device=None,
            dtype=None,
    ) -> None:
        check_heads(dim, num_heads, 0)  # the width need not split into the heads: _resize_heads sizes them
        super().__init__(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop,
                         device=device, dtype=dtype)
        self.head_dim = _resize_heads(self, dim, num_heads, head_dim, ('q', 'k', 'v'))
        self.init_lsa(self.head_dim, diag_mask, learn_temp, temp_ratio, device=device, dtype=dtype)

    def init_lsa(self, head_dim: int, diag_mask: bool = False, *args: Any, **kwargs: Any) -> None:
        if diag_mask:
            raise ValueError('diag_mask=True is not supported by LocalityClassAttn: class attention has no diagonal '
                             'mask (the reference applies none); allowed: diag_mask=False.')
        super().init_lsa(head_dim, False, *args, **kwargs)

    def forward(self, x: torch.Tensor, kv: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The class token ``x[:, 0]`` attends to ``kv`` (default: all of ``x``, timm's class attention)."""
        B = x.shape[0]
        kv = x if kv is None else kv
        N = kv.shape[1]
        q = self.q(x[:, 0]).reshape(B, 1, self.num_heads, self.head_dim).transpose(1, 2)
        q = q * self.temperature.to(q.dtype).view(-1, 1, 1)
        k = self.k(kv).reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v(kv).reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)
        if self.fused_attn:
            x_cls = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.attn_drop.p if self.training else 0., scale=1.0)
        else:
            attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
            attn = self.attn_drop(attn)
            x_cls = attn @ v
        x_cls = x_cls.transpose(1, 2).reshape(B, 1, self.num_heads * self.head_dim)  # explicit width: B may be 0
        x_cls = self.proj(x_cls)
        x_cls = self.proj_drop(x_cls)
        return x_cls

    def extra_repr(self) -> str:
        return f'num_heads={self.num_heads}, head_dim={self.head_dim}, {self.lsa_repr()}'

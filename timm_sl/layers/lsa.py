"""Locality Self-Attention (LSA).

Paper: `Vision Transformer for Small-Size Datasets` (Lee, Lee & Song, 2021), Eq. 9-10: the self-relation on the
diagonal of ``QK^T`` is masked to ``-inf`` before the softmax, and the ``1 / sqrt(d_k)`` scale is replaced by a
learnable per-head multiplier (the inverse softmax temperature) initialised to ``head_dim ** -0.5``.

Following the reference code, the learnable parameter is called ``temperature`` and holds the multiplier of
``QK^T`` (so a *smaller* value is a *higher* softmax temperature). The paper's Table 1 expresses fixed temperatures
as ``ratio * sqrt(d_k)``; ``temp_ratio`` takes that ratio, giving the multiplier ``head_dim ** -0.5 / temp_ratio``.

Every LSA attention computes the same two things in its forward: ``q = q * temperature`` (one elementwise op, per
head) and an additive ``-inf`` diagonal (:func:`lsa_attn_bias`) handed to ``F.scaled_dot_product_attention`` with
``scale=1.0``, or added to the logits on the explicit path.
"""
from typing import Iterable, Optional, Set

import torch
import torch.nn.functional as F
from torch import nn

from timm.layers import Attention, register_notrace_function
from timm.layers.attention import maybe_add_mask, resolve_self_attn_mask

__all__ = ['check_heads', 'LsaMixin', 'LocalitySelfAttention', 'check_temp_ratio', 'diagonal_bias', 'lsa_attn_bias',
           'lsa_no_weight_decay', 'mask_diagonal_', 'set_lsa_switches']


def check_temp_ratio(temp_ratio: float, name: str = 'temp_ratio') -> None:
    """Raise ``ValueError`` unless the temperature ratio is a finite number > 0."""
    if isinstance(temp_ratio, bool) or not isinstance(temp_ratio, (int, float)) or not 0 < temp_ratio < float('inf'):
        raise ValueError(f'{name}={temp_ratio!r} is invalid; allowed: a finite number > 0 (1.0 = sqrt(head_dim)).')


def check_heads(dim: int, num_heads: int, head_dim: Optional[int] = None, head_dim_name: str = 'head_dim') -> None:
    """Raise ``ValueError`` naming the value unless ``dim`` and ``num_heads`` are ints >= 1 and, without a
    ``head_dim``, the heads divide the width (timm's attention asserted it, or divided by zero)."""
    for name, value in (('dim', dim), ('num_heads', num_heads)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f'{name}={value!r} is invalid; allowed: an int >= 1.')
    if head_dim is None and dim % num_heads:
        raise ValueError(f'dim={dim}, num_heads={num_heads}: the heads do not divide the width; allowed: a '
                         f'num_heads that divides dim, or {head_dim_name} set.')


try:  # resolved here, not while dynamo traces: torch 2.2's dynamo cannot trace a getattr on a module
    from torch.compiler import is_compiling as _is_compiling  # torch >= 2.3
except ImportError:  # torch 2.2
    from torch._dynamo import is_compiling as _is_compiling


@torch.jit.unused
def _capturing() -> bool:
    return torch.jit.is_tracing() or _is_compiling()


def _functional_only() -> bool:
    """True while a graph is captured: the jit tracer (TorchScript ONNX export), dynamo (``torch.compile``) or
    ``torch.export`` (dynamo ONNX export). They get the mask in functional form: the tracer's export drops writes
    through a diagonal view, the export's decomposition refuses them. (TorchScript runs the eager form.)"""
    if torch.jit.is_scripting():
        return False
    return _capturing()


def diagonal_bias(num_tokens: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``(N, N)`` additive bias: ``-inf`` on the diagonal, 0 elsewhere (all 0 for a lone token, which must keep its
    only key).

    Eager, built per call in two kernels (a fill, then a fill of its diagonal view): a per-layer constant would save
    at most one (under AMP it still needs a cast to the logits' dtype) and would have to follow the token count.
    While a graph is captured the mask is functional: an arange comparison (``torch.eye`` exports as EyeLike, which
    ONNX Runtime cannot run for bool), with the lone-token rule as a tensor expression, since under the jit tracer
    ``N`` is a traced size and the graph must be right for any token count.
    """
    if _functional_only():
        index = torch.arange(num_tokens, device=device)
        # a lone token is compared with 1: never equal (no bool `&`: torch 2.2's inductor cannot generate it on CPU)
        diag = index.unsqueeze(1) == (index + (index.max() == 0).to(index.dtype)).unsqueeze(0)
        return torch.zeros(num_tokens, num_tokens, dtype=dtype, device=device).masked_fill(diag, float('-inf'))
    bias = torch.zeros(num_tokens, num_tokens, dtype=dtype, device=device)
    if num_tokens > 1:
        bias.diagonal().fill_(float('-inf'))
    return bias


@register_notrace_function  # branches on the token count: a leaf of FX graphs
def mask_diagonal_(logits: torch.Tensor) -> torch.Tensor:
    """``logits`` ``(..., N, N)`` with ``-inf`` written on the diagonal in place, eager (one kernel; left as they are
    for a lone token). Only where nothing reads the logits before (autograd: the op that made them must not need its
    output). While a graph is captured (tracer, dynamo, export) the :func:`diagonal_bias` is added instead."""
    num_tokens = logits.shape[-1]
    if _functional_only():
        return logits + diagonal_bias(num_tokens, logits.dtype, logits.device)
    if num_tokens > 1:
        logits.diagonal(dim1=-2, dim2=-1).fill_(float('-inf'))
    return logits


@register_notrace_function
def lsa_attn_bias(
        num_tokens: int,
        dtype: torch.dtype,
        device: torch.device,
        attn_mask: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Additive attention bias with ``-inf`` on the diagonal, combined with an optional ``attn_mask``.

    A query whose only allowed key is itself (a single token, or a row that ``attn_mask`` already restricts to the
    diagonal) would be fully masked and give NaN; such rows keep their diagonal entry unmasked.

    Args:
        num_tokens: Sequence length N.
        dtype: Float dtype of the bias (the attention logits' dtype).
        device: Device of the bias.
        attn_mask: Optional boolean (True = attend) or additive mask broadcastable to ``(..., N, N)``.

    Returns:
        Additive bias of shape ``(N, N)``, or the broadcast shape of ``attn_mask``.
    """
    if attn_mask is None:
        return diagonal_bias(num_tokens, dtype, device)
    index = torch.arange(num_tokens, device=device)
    diag = index.unsqueeze(1) == index.unsqueeze(0)
    if attn_mask.dtype == torch.bool:
        base = torch.zeros(attn_mask.shape, dtype=dtype, device=device).masked_fill_(~attn_mask, float('-inf'))
    else:
        base = attn_mask.to(dtype)
    bias = base.masked_fill(diag, float('-inf'))
    # rows left without any finite logit: give them back their self-relation
    dead_row = (bias == float('-inf')).all(dim=-1, keepdim=True)  # not isneginf: the TorchScript ONNX export lacks it
    return torch.where(diag & dead_row, base, bias)


class LsaMixin:
    """What every LSA attention adds to its host: the switches and the per-head ``temperature``.

    Methods only (no ``__init__``, no ``super()`` call), so the base order of a host class does not matter; a host
    calls :meth:`init_lsa` at the end of its constructor. Switches:

    * ``diag_mask``: mask the self-relation (paper's "M");
    * ``learn_temp``: learn the per-head multiplier of ``QK^T`` (paper's "T"; a fixed non-persistent buffer otherwise);
    * ``temp_ratio``: softmax temperature as a multiple of ``sqrt(head_dim)`` (paper Table 1).
    """
    temperature: torch.Tensor
    num_heads: int

    def init_lsa(
            self,
            head_dim: int,
            diag_mask: bool = True,
            learn_temp: bool = True,
            temp_ratio: float = 1.0,
            device=None,
            dtype=None,
    ) -> None:
        """Set the switches and (re)create ``temperature``: ``num_heads`` values of ``head_dim ** -0.5 / temp_ratio``,
        a parameter when learned, a non-persistent buffer otherwise. ``torch.full`` draws no random numbers, so
        calling it again on a built layer (:func:`set_lsa_switches`) leaves every other value as it was."""
        check_temp_ratio(temp_ratio)
        for name, value in (('diag_mask', diag_mask), ('learn_temp', learn_temp)):
            if not isinstance(value, bool):  # 'maybe' or 0 / 1 would switch a part on or off unseen
                raise ValueError(f'{name}={value!r} is invalid; allowed: True or False.')
        self.lsa_head_dim = head_dim
        self.diag_mask = diag_mask
        self.learn_temp = learn_temp
        self.temp_ratio = float(temp_ratio)
        init = torch.full((self.num_heads,), self.init_temperature, device=device, dtype=dtype)
        if 'temperature' in self._parameters or 'temperature' in self._buffers:
            delattr(self, 'temperature')
        if learn_temp:
            self.temperature = nn.Parameter(init)
        else:
            self.register_buffer('temperature', init, persistent=False)

    @property
    def init_temperature(self) -> float:
        """Initial (or fixed) multiplier of ``QK^T``: ``head_dim ** -0.5 / temp_ratio``."""
        return self.lsa_head_dim ** -0.5 / self.temp_ratio

    def reset_temperature(self) -> None:
        with torch.no_grad():
            self.temperature.fill_(self.init_temperature)

    def init_non_persistent_buffers(self) -> None:
        """timm's hook for buffers a checkpoint does not hold, called after a build on the meta device
        (``timm.models.reinit_non_persistent_buffers``, transformers' timm wrapper): a fixed temperature."""
        if not self.learn_temp:
            self.reset_temperature()

    def lsa_repr(self) -> str:
        return f'diag_mask={self.diag_mask}, learn_temp={self.learn_temp}, temp_ratio={self.temp_ratio}'


def set_lsa_switches(
        modules: Iterable[nn.Module],
        diag_mask: bool = True,
        learn_temp: bool = True,
        temp_ratio: float = 1.0,
) -> None:
    """Give every LSA layer among ``modules`` (and their children) these switches.

    The seam for backbones that build their attention from a bare class (timm's ``Block`` checks ``attn_layer`` with
    ``issubclass``, so no ``functools.partial`` can carry the switches): they are built with the LSA class's defaults
    and switched right after. The temperature is re-created on its device and dtype, no random number is drawn; a
    Swin block among them remakes its mask, which holds the diagonal when its attention masks it.
    """
    for module in modules:
        for layer in module.modules():
            if isinstance(layer, LsaMixin):
                layer.init_lsa(layer.lsa_head_dim, diag_mask, learn_temp, temp_ratio,
                               device=layer.temperature.device, dtype=layer.temperature.dtype)
        for layer in module.modules():
            if getattr(layer, 'holds_lsa_pattern', False):  # a block whose mask buffer holds its LSA layer's diagonal
                layer.init_non_persistent_buffers()


class LocalitySelfAttention(Attention, LsaMixin):
    """timm ``Attention`` with LSA: diagonal masking and a per-head learnable temperature.

    Drop-in for ``timm.layers.Attention``: the same constructor (plus the LSA switches ``diag_mask``, ``learn_temp``,
    ``temp_ratio`` of :class:`LsaMixin`) and parameter names, so state dicts line up; adds ``temperature`` (shape
    ``(num_heads,)``), in the state dict when it is learned.
    """

    def __init__(
            self,
            dim: int,
            num_heads: int = 8,
            attn_head_dim: Optional[int] = None,
            dim_out: Optional[int] = None,
            qkv_bias: bool = False,
            qk_norm: bool = False,
            scale_norm: bool = False,
            proj_bias: bool = True,
            gated: bool = False,
            attn_drop: float = 0.,
            proj_drop: float = 0.,
            norm_layer: Optional[type] = None,
            diag_mask: bool = True,
            learn_temp: bool = True,
            temp_ratio: float = 1.0,
            device=None,
            dtype=None,
    ) -> None:
        check_heads(dim, num_heads, attn_head_dim, 'attn_head_dim')
        super().__init__(
            dim, num_heads=num_heads, attn_head_dim=attn_head_dim, dim_out=dim_out, qkv_bias=qkv_bias,
            qk_norm=qk_norm, scale_norm=scale_norm, proj_bias=proj_bias, gated=gated, attn_drop=attn_drop,
            proj_drop=proj_drop, norm_layer=norm_layer, device=device, dtype=dtype)
        self.init_lsa(self.head_dim, diag_mask, learn_temp, temp_ratio, device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Called by timm's ViT weight init (``init_weights_vit_*``) on modules without ``init_weights``."""
        self.reset_temperature()

    def forward(
            self,
            x: torch.Tensor,
            attn_mask: Optional[torch.Tensor] = None,
            is_causal: bool = False,
    ) -> torch.Tensor:
        B, N, C = x.shape
        gate = self.gate(x).sigmoid() if self.gate is not None else None
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        q = q * self.temperature.to(q.dtype).view(-1, 1, 1)  # the learned scale, in place of SDPA's fixed one
        attn_bias = resolve_self_attn_mask(N, q, attn_mask, is_causal)  # bool / causal -> additive, or None
        if self.diag_mask:
            attn_bias = lsa_attn_bias(N, q.dtype, q.device, attn_bias)

        if self.fused_attn:
            x = F.scaled_dot_product_attention(
                q, k, v,
                attn_mask=attn_bias,
                dropout_p=self.attn_drop.p if self.training else 0.,
                scale=1.0,
            )
        else:
            attn = q @ k.transpose(-2, -1)
            attn = maybe_add_mask(attn, attn_bias)
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x = attn @ v

        x = x.transpose(1, 2).reshape(B, N, self.attn_dim)
        x = self.norm(x)
        if gate is not None:
            x = x * gate
        x = self.proj(x)
        x = self.proj_drop(x)
        return x

    def extra_repr(self) -> str:
        return f'num_heads={self.num_heads}, head_dim={self.head_dim}, {self.lsa_repr()}'


def lsa_no_weight_decay(model: nn.Module) -> Set[str]:
    """Names of every learnable LSA temperature in ``model``, for its ``no_weight_decay()``.

    A temperature is a softmax sharpness, not a weight: decaying it pulls the softmax towards uniform, which is the
    smoothing LSA is meant to undo (the reference code decays it by accident).
    """
    return {
        f'{name}.temperature' if name else 'temperature'
        for name, module in model.named_modules()
        if isinstance(module, LsaMixin) and module.learn_temp
    }

"""Locality Self-Attention (LSA).

Paper: `Vision Transformer for Small-Size Datasets` (Lee, Lee & Song, 2021), Eq. 9-10: the self-relation on the
diagonal of ``QK^T`` is masked to ``-inf`` before the softmax, and the ``1 / sqrt(d_k)`` scale is replaced by a
learnable per-head multiplier (the inverse softmax temperature) initialised to ``head_dim ** -0.5``.

Following the reference code, the learnable parameter is called ``temperature`` and holds the multiplier of
``QK^T`` (so a *smaller* value is a *higher* softmax temperature). The paper's Table 1 expresses fixed temperatures
as ``ratio * sqrt(d_k)``; ``temp_ratio`` takes that ratio, giving the multiplier ``head_dim ** -0.5 / temp_ratio``.
"""
import copy
import functools
from typing import Any, Dict, Optional, Set, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from timm.layers import Attention
from timm.layers.attention import maybe_add_mask, resolve_self_attn_mask
from timm.layers import register_notrace_function

from .from_timm import check_timm_source, copy_timm_state, module_dd
from .shared_tensors import SharedTensorCache

__all__ = ['LsaMixin', 'TimmLsaMixin', 'LocalitySelfAttention', 'check_temp_ratio', 'diagonal_bias',
           'shared_diagonal_bias', 'lsa_attn_bias', 'lsa_no_weight_decay']


def check_temp_ratio(temp_ratio: float, name: str = 'temp_ratio') -> None:
    """Raise ``ValueError`` unless the temperature ratio is a finite number > 0."""
    if isinstance(temp_ratio, bool) or not isinstance(temp_ratio, (int, float)) or not 0 < temp_ratio < float('inf'):
        raise ValueError(f'{name}={temp_ratio!r} is invalid; allowed: a finite number > 0 (1.0 = sqrt(head_dim)).')


# Diagonal biases shared between attention calls (``lsa_attn_bias(..., shared=True)``) up to this many tokens (4 MiB
# in float32); larger ones are built per call, their attention costing far more than the bias.
MAX_SHARED_BIAS_TOKENS = 1024
_DIAGONAL_BIASES = SharedTensorCache(max_entries=32)


def diagonal_bias(num_tokens: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``(N, N)`` additive bias: ``-inf`` on the diagonal, 0 elsewhere (all 0 for a lone token, which must keep its
    only key)."""
    # arange comparison rather than torch.eye: ONNX exports a bool eye as EyeLike, which ONNX Runtime cannot run
    index = torch.arange(num_tokens, device=device)
    diag = index.unsqueeze(1) == index.unsqueeze(0)
    bias = torch.zeros(num_tokens, num_tokens, dtype=dtype, device=device)
    return bias.masked_fill_(diag, float('-inf')) if num_tokens > 1 else bias


@torch.jit.unused
def shared_diagonal_bias(num_tokens: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """:func:`diagonal_bias`, built once per ``(N, dtype, device)`` and shared between calls (four small kernels less
    per attention call, see :mod:`~timm_sl.layers.shared_tensors`); built per call above
    :data:`MAX_SHARED_BIAS_TOKENS` tokens or while a graph is captured. Must not be modified in place."""
    if num_tokens > MAX_SHARED_BIAS_TOKENS:
        return diagonal_bias(num_tokens, dtype, device)
    device = torch.device(device)
    return _DIAGONAL_BIASES.get((num_tokens, dtype, device), lambda: diagonal_bias(num_tokens, dtype, device), device)


@register_notrace_function
def lsa_attn_bias(
        num_tokens: int,
        dtype: torch.dtype,
        device: torch.device,
        attn_mask: Optional[torch.Tensor] = None,
        shared: bool = False,
) -> torch.Tensor:
    """Additive attention bias with ``-inf`` on the diagonal, combined with an optional ``attn_mask``.

    A query whose only allowed key is itself (a single token, or a row that ``attn_mask`` already restricts to the
    diagonal) would be fully masked and give NaN; such rows keep their diagonal entry unmasked.

    Args:
        num_tokens: Sequence length N.
        dtype: Float dtype of the bias (the attention logits' dtype).
        device: Device of the bias.
        attn_mask: Optional boolean (True = attend) or additive mask broadcastable to ``(..., N, N)``.
        shared: Without ``attn_mask``, return the bias shared between calls (:func:`shared_diagonal_bias`, as the
            attention layers do) rather than a new tensor; it must not be modified in place.

    Returns:
        Additive bias of shape ``(N, N)``, or the broadcast shape of ``attn_mask``.
    """
    if attn_mask is None:
        if shared and not torch.jit.is_scripting():
            return shared_diagonal_bias(num_tokens, dtype, device)
        return diagonal_bias(num_tokens, dtype, device)
    index = torch.arange(num_tokens, device=device)
    diag = index.unsqueeze(1) == index.unsqueeze(0)
    neg_inf = torch.tensor(float('-inf'), dtype=dtype, device=device)
    if attn_mask.dtype == torch.bool:
        base = torch.where(attn_mask, torch.zeros((), dtype=dtype, device=device), neg_inf)
    else:
        base = attn_mask.to(dtype)
    bias = torch.where(diag, neg_inf, base)
    # rows left without any finite logit: give them back their self-relation
    dead_row = (bias == float('-inf')).all(dim=-1, keepdim=True)  # not isneginf: the TorchScript ONNX export lacks it
    return torch.where(diag & dead_row, base, bias)


class LsaMixin:
    """The LSA state shared by every attention flavour (plain, windowed, talking-heads, ...).

    Adds ``temperature`` (per head: a parameter when learnable, a non-persistent buffer otherwise), the switches
    ``diag_mask`` / ``learn_temp`` / ``temp_ratio``, the class factory :meth:`configured`, and the folding of the
    temperature into a fused qkv projection. A host calls :meth:`init_lsa` at the end of its ``__init__``.
    """
    temperature: torch.Tensor

    def init_lsa(
            self,
            num_heads: int,
            head_dim: int,
            diag_mask: bool = True,
            learn_temp: bool = True,
            temp_ratio: float = 1.0,
            device=None,
            dtype=None,
    ) -> None:
        check_temp_ratio(temp_ratio)
        self.lsa_head_dim = head_dim
        self.diag_mask = diag_mask
        self.learn_temp = learn_temp
        self.temp_ratio = float(temp_ratio)
        init = torch.full((num_heads,), self.init_temperature, device=device, dtype=dtype)
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
        (``timm.models.reinit_non_persistent_buffers``, transformers' timm wrapper): the host's own (e.g. Swin's
        relative position index), then the fixed temperature (a buffer when it is not learned)."""
        host = getattr(super(), 'init_non_persistent_buffers', None)
        if host is not None:
            host()
        if not self.learn_temp:
            self.reset_temperature()

    @classmethod
    def configured(cls, **defaults: Any) -> type:
        """A subclass whose constructor defaults are ``defaults`` (the LSA switches, a head dim, ...).

        timm's blocks build their attention from a class (``Block`` calls ``issubclass`` on it), so a
        ``functools.partial`` cannot be passed as ``attn_layer``. The subclass keeps this class's name and only binds
        defaults, so instances pickle (as this class) and script like the base class.
        """
        return _configured_lsa(cls, tuple(sorted(defaults.items())))

    @classmethod
    def for_switches(cls, sl_args: Any, **defaults: Any) -> type:
        """:meth:`configured` with the LSA switches of ``sl_args`` (a :class:`~timm_sl.layers.SlArgs`) and
        ``defaults``: the attention class a timm block builds, and the class a conversion builds."""
        return cls.configured(**sl_args.lsa_kwargs(), **defaults)

    def scaled_qkv_params(
            self,
            weight: torch.Tensor,
            bias: Optional[torch.Tensor],
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Weight and bias of a fused qkv projection with the q rows multiplied by each head's temperature.

        ``(t * q) . k == (x W_q^T t) . k``: scaling the (small) weight instead of the (large) q activation keeps q, k,
        v as views of one projection output, the memory layout SDPA's fused kernels are fastest on.
        """
        num_heads, head_dim = self.temperature.shape[0], self.lsa_head_dim
        q_dim = num_heads * head_dim
        scale = self.temperature.to(weight.dtype).view(num_heads, 1, 1)
        # only the q rows are multiplied and the k / v rows (none for a q-only projection) joined back: two kernels,
        # not a row-scale vector built and multiplied over the whole weight
        weight = torch.cat([(weight[:q_dim].reshape(num_heads, head_dim, -1) * scale).view(q_dim, -1), weight[q_dim:]])
        if bias is not None:
            bias = torch.cat([(bias[:q_dim].view(num_heads, head_dim) * scale.view(-1, 1)).view(q_dim), bias[q_dim:]])
        return weight, bias

    def lsa_repr(self) -> str:
        return f'diag_mask={self.diag_mask}, learn_temp={self.learn_temp}, temp_ratio={self.temp_ratio}'


class TimmLsaMixin(LsaMixin):
    """LSA on a timm attention class (``class X(TimmLsaMixin, TimmAttention)``): the one constructor signature and
    the one conversion from a timm instance.

    The constructor takes the timm class's arguments plus the LSA switches ``diag_mask`` (mask the self-relation,
    paper's "M"), ``learn_temp`` (learn the per-head multiplier of ``QK^T``, paper's "T"; a fixed buffer otherwise)
    and ``temp_ratio`` (softmax temperature as a multiple of ``sqrt(head_dim)``, paper Table 1). A host names the
    timm class it replaces (``timm_cls``) and how to read that class's constructor arguments back from an instance
    (:meth:`timm_config`).
    """
    timm_cls: type

    def __init__(
            self,
            *args: Any,
            diag_mask: bool = True,
            learn_temp: bool = True,
            temp_ratio: float = 1.0,
            **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.init_lsa(self.num_heads, self.host_head_dim(), diag_mask, learn_temp, temp_ratio,
                      device=kwargs.get('device'), dtype=kwargs.get('dtype'))

    def host_head_dim(self) -> int:
        """Width of one head of the timm layer just built (the temperature starts at its ``** -0.5``)."""
        return self.head_dim

    @classmethod
    def timm_config(cls, module: nn.Module) -> Dict[str, Any]:
        """Constructor keyword arguments that rebuild ``module`` (an instance of ``timm_cls``)."""
        raise NotImplementedError

    def adopt_timm(self, module: nn.Module) -> None:
        """Take from ``module`` what its constructor arguments cannot express (default: nothing)."""

    @classmethod
    def from_timm(cls, module: nn.Module, **switches: Any) -> 'TimmLsaMixin':
        """The LSA form of a timm attention: its configuration, its weights (every key, strictly; ``temperature``
        keeps its init) and its kernel choice, plus the LSA ``switches``."""
        check_timm_source(module, cls.timm_cls, cls.__name__)
        new = cls(**cls.timm_config(module), **switches, **module_dd(module))
        new.adopt_timm(module)
        return copy_timm_state(new, module)


class LocalitySelfAttention(TimmLsaMixin, Attention):
    """timm ``Attention`` with LSA: diagonal masking and a per-head learnable temperature.

    Drop-in for ``timm.layers.Attention`` (same constructor and parameter names, so state dicts line up; the LSA
    switches of :class:`TimmLsaMixin`); adds ``temperature`` (shape ``(num_heads,)``) when it is learnable. Use
    :meth:`configured` to get a class with the LSA switches bound, as timm's blocks take an attention *class*.
    """

    timm_cls = Attention

    def init_lsa(self, *args: Any, **kwargs: Any) -> None:
        super().init_lsa(*args, **kwargs)
        # with a q norm the temperature must scale the normalised q; otherwise it folds into the qkv weight
        self.fold_temperature = isinstance(self.q_norm, nn.Identity)

    def reset_parameters(self) -> None:
        self.reset_temperature()

    @classmethod
    def timm_config(cls, attn: Attention) -> Dict[str, Any]:
        return dict(
            dim=attn.qkv.in_features,
            num_heads=attn.num_heads,
            attn_head_dim=attn.head_dim,
            dim_out=attn.proj.out_features,
            qkv_bias=attn.qkv.bias is not None,
            qk_norm=not isinstance(attn.q_norm, nn.Identity),
            scale_norm=not isinstance(attn.norm, nn.Identity),
            proj_bias=attn.proj.bias is not None,
            gated=attn.gate is not None,
            attn_drop=attn.attn_drop.p,
            proj_drop=attn.proj_drop.p,
            norm_layer=type(attn.q_norm) if not isinstance(attn.q_norm, nn.Identity) else (
                type(attn.norm) if not isinstance(attn.norm, nn.Identity) else None),
        )

    def adopt_timm(self, attn: Attention) -> None:
        # the norms themselves, not rebuilt from their class: a partial's options (eps, ...) would be lost
        self.q_norm, self.k_norm, self.norm = (copy.deepcopy(m) for m in (attn.q_norm, attn.k_norm, attn.norm))

    @classmethod
    def from_attention(cls, attn: Attention, **switches: Any) -> 'LocalitySelfAttention':
        """:meth:`from_timm` under the name it has had."""
        return cls.from_timm(attn, **switches)

    def forward(
            self,
            x: torch.Tensor,
            attn_mask: Optional[torch.Tensor] = None,
            is_causal: bool = False,
    ) -> torch.Tensor:
        # timm's Attention.forward scales by a fixed float inside SDPA and has no hook for a per-head tensor scale
        # or a diagonal mask, so the attention core is written out here; the projections are timm's own modules.
        B, N, C = x.shape
        gate = self.gate(x).sigmoid() if self.gate is not None else None
        if self.fold_temperature:
            qkv = F.linear(x, *self.scaled_qkv_params(self.qkv.weight, self.qkv.bias))
        else:
            qkv = self.qkv(x)
        qkv = qkv.reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        if not self.fold_temperature:
            q = q * self.temperature.to(q.dtype).view(-1, 1, 1)
        attn_bias = resolve_self_attn_mask(N, q, attn_mask, is_causal)  # bool / causal -> additive, or None
        if self.diag_mask:
            attn_bias = lsa_attn_bias(N, q.dtype, q.device, attn_bias, shared=True)

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


def _new_instance(cls: type) -> object:
    return cls.__new__(cls)


@functools.lru_cache(maxsize=None)
def _configured_lsa(base: type, items: Tuple[Tuple[str, Any], ...]):
    defaults = dict(items)

    def __init__(self, *args, **kwargs):
        base.__init__(self, *args, **{**defaults, **kwargs})

    def __reduce_ex__(self, protocol):
        # pickle as the base class: the switches live on the instance, this subclass only held constructor defaults
        _, _, *state = object.__reduce_ex__(self, max(protocol, 2))
        return (_new_instance, (base,), *state)

    return type(base.__name__, (base,), {
        '__init__': __init__, '__reduce_ex__': __reduce_ex__, '__module__': base.__module__,
        '__qualname__': base.__qualname__, '__doc__': base.__doc__, 'lsa_defaults': defaults})


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

"""SL-T2T: Tokens-to-Token ViT built on timm's VisionTransformer, with SPT and LSA.

Papers: `Tokens-to-Token ViT` - https://arxiv.org/abs/2101.11986 (T2T);
`Vision Transformer for Small-Size Datasets` - https://arxiv.org/abs/2112.13492 (SL).

timm has no T2T-ViT, so the tokenizer is written here as a timm ``embed_layer`` (:class:`T2TEmbed`): soft splits
(overlapping ``nn.Unfold``) with a small token transformer between consecutive splits, then a Linear to the backbone
width. The backbone is timm's own ``VisionTransformer`` (with LSA as its ``attn_layer``) and T2T's fixed sinusoidal
position embedding. SL-T2T shifts the raw image (one pixel for the small configs: ``int(first stride *
shift_ratio)``) and concatenates the copies before the first soft split, and uses LSA in the token layers too.

Token layers follow T2T: one head, the attention maps the split width to ``token_dim`` and its residual is the value
itself; its softmax scale is ``(split width) ** -0.5`` as in T2T's code (the LSA temperature starts there).

``extra_residual=True`` reproduces the reference code's backbone blocks, ``x + Attn(LN x) + LN x`` (its attention
returns ``out + input`` for multi-head layers and the block adds its own residual): an authors' bug, off by default,
offered for exact reproduction of Table 2's T2T rows.
"""
import math
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from timm.layers import Format, Mlp, _assert, nchw_to, to_2tuple, use_fused_attn
from timm.layers.attention import maybe_add_mask
from timm.models import VisionTransformer, build_model_with_cfg, generate_default_cfgs, register_model
from timm.models.vision_transformer import Block

from ..layers import (
    LocalitySelfAttention, LsaMixin, check_in_chans, lsa_attn_bias, lsa_no_weight_decay, resolve_shift,
    set_lsa_switches, shift_and_concat, shift_offsets)
from ._cfgs import sl_cfg, small_data_cfg, with_pretrained_tags
from ._family import pop_sl_kwargs
from ._saved_config import saved_config_named
from ._sl_args import asked_for, backbone_kwarg, check_bool, check_depths, check_global_tokens, check_size, patch_grid
from ._filters import adapt_norm_linear_entries, adapt_sl_state_dict, claim_stem_adaptation, unwrap_state_dict

__all__ = ['ExtraResidualBlock', 'SlT2T', 'T2TEmbed', 'TokenTransformer', 'check_soft_splits',
           'sinusoid_position_embedding']

SoftSplit = Tuple[int, int, int]  # kernel, stride, padding


def sinusoid_position_embedding(num_positions: int, dim: int) -> torch.Tensor:
    """The fixed sin/cos table of `Attention Is All You Need`, shape ``(1, num_positions, dim)``."""
    position = torch.arange(num_positions, dtype=torch.float64).unsqueeze(1)
    freq = torch.pow(10000., -2 * (torch.arange(dim) // 2) / dim).to(torch.float64)
    angle = position * freq
    table = torch.where(torch.arange(dim) % 2 == 0, torch.sin(angle), torch.cos(angle))
    return table.float().unsqueeze(0)


class TokenAttention(nn.Module, LsaMixin):
    """T2T's token-layer attention (``dim -> token_dim``, residual through ``v``) with optional LSA (the switches of
    :class:`~timm_sl.layers.LsaMixin`; off by default, T2T's own layer)."""
    fused_attn: torch.jit.Final[bool]

    def __init__(
            self,
            dim: int,
            token_dim: int,
            num_heads: int = 1,
            qkv_bias: bool = False,
            diag_mask: bool = False,
            learn_temp: bool = False,
            temp_ratio: float = 1.0,
            device=None,
            dtype=None,
    ) -> None:
        super().__init__()
        dd = {'device': device, 'dtype': dtype}
        self.num_heads = num_heads
        self.token_dim = token_dim
        self.fused_attn = use_fused_attn()
        self.qkv = nn.Linear(dim, token_dim * 3, bias=qkv_bias, **dd)
        self.proj = nn.Linear(token_dim, token_dim, **dd)
        # T2T scales by the *input* width per head; the temperature starts from that value
        self.init_lsa(dim // num_heads, diag_mask, learn_temp, temp_ratio, **dd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, _ = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.token_dim // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.temperature.to(q.dtype).view(-1, 1, 1)
        attn_bias = lsa_attn_bias(N, q.dtype, q.device) if self.diag_mask else None
        if self.fused_attn:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias, scale=1.0)
        else:
            attn = q @ k.transpose(-2, -1)
            attn = maybe_add_mask(attn, attn_bias)
            attn = attn.softmax(dim=-1)
            out = attn @ v
        out = self.proj(out.transpose(1, 2).reshape(B, N, self.token_dim))
        return v.transpose(1, 2).reshape(B, N, self.token_dim) + out

    def extra_repr(self) -> str:
        return f'token_dim={self.token_dim}, num_heads={self.num_heads}, {self.lsa_repr()}'


class TokenTransformer(nn.Module):
    """T2T's token layer: norm, width-changing attention, then a residual MLP of ratio ``mlp_ratio``."""

    def __init__(self, dim: int, token_dim: int, mlp_ratio: float = 1., device=None, dtype=None,
                 **attn_kwargs: Any) -> None:
        super().__init__()
        dd = {'device': device, 'dtype': dtype}
        self.norm1 = nn.LayerNorm(dim, **dd)
        self.attn = TokenAttention(dim, token_dim, **attn_kwargs, **dd)
        self.norm2 = nn.LayerNorm(token_dim, **dd)
        self.mlp = Mlp(token_dim, int(token_dim * mlp_ratio), token_dim, **dd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def check_soft_splits(soft_splits: Any, token_dim: Any) -> None:
    """Raise ``ValueError`` naming the value unless ``soft_splits`` is a non-empty sequence of ``(kernel, stride,
    padding)`` ints (kernel, stride >= 1, padding >= 0) and ``token_dim`` an int >= 1."""
    def valid(split: Any) -> bool:
        return isinstance(split, (tuple, list)) and len(split) == 3 and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= low for v, low in zip(split, (1, 1, 0)))
    if not isinstance(soft_splits, (tuple, list)) or not soft_splits or not all(map(valid, soft_splits)):
        raise ValueError(f'soft_splits={soft_splits!r} is invalid; allowed: a non-empty sequence of (kernel, stride, '
                         f'padding) int triples, kernel and stride >= 1, padding >= 0.')
    check_depths(dict(token_dim=token_dim), 'token_dim', positive=('token_dim',))


def _split_size(size: Tuple[int, int], split: SoftSplit) -> Tuple[int, int]:
    """Output ``(H, W)`` of one soft split (an unfold of kernel ``k``, stride ``s``, padding ``p``) on ``size``."""
    k, s, p = split
    return (size[0] + 2 * p - k) // s + 1, (size[1] + 2 * p - k) // s + 1


class SoftSplitStage(nn.Module):
    """One soft split (overlapping unfold) followed by a token layer; maps a map ``(B, C, H, W)`` to
    ``(B, token_dim, H', W')``."""

    def __init__(self, chans: int, split: SoftSplit, token_dim: int, device=None, dtype=None,
                 **attn_kwargs: Any) -> None:
        super().__init__()
        self.split = tuple(split)
        k, s, p = self.split
        self.unfold = nn.Unfold(k, stride=s, padding=p)
        self.layer = TokenTransformer(chans * k * k, token_dim, device=device, dtype=dtype, **attn_kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, _, H, W = x.shape
        x = self.layer(self.unfold(x).transpose(1, 2))  # (B, tokens, token_dim)
        return x.transpose(1, 2).reshape(B, x.shape[-1], *_split_size((H, W), self.split))


class T2TEmbed(nn.Module):
    """Tokens-to-Token tokenizer as a timm ``VisionTransformer`` ``embed_layer``.

    Args:
        img_size: Input size.
        patch_size: Total stride of the soft splits (the backbone's token stride); checked against ``soft_splits``.
        in_chans: Input channels.
        embed_dim: Backbone width.
        soft_splits: ``(kernel, stride, padding)`` of every soft split; a token layer sits between consecutive ones.
        token_dim: Width of the token layers.
        spt: Shift the raw image (SPT without its own projection) before the first split.
        shift_ratio, shift_directions: SPT settings; the shift is ``int(first stride * shift_ratio)`` px.
        lsa_kwargs: LSA switches of the token layers (``diag_mask``, ``learn_temp``, ``temp_ratio``), or None.
    """
    output_fmt: Format

    def __init__(
            self,
            img_size: Union[int, Tuple[int, int]] = 224,
            patch_size: int = 16,
            in_chans: int = 3,
            embed_dim: int = 768,
            soft_splits: Sequence[SoftSplit] = ((7, 4, 2), (3, 2, 1), (3, 2, 1)),
            token_dim: int = 64,
            spt: bool = False,
            shift_ratio: float = 0.5,
            shift_directions: str = 'diagonal',
            lsa_kwargs: Optional[Dict[str, Any]] = None,
            bias: bool = True,
            strict_img_size: bool = True,
            output_fmt: Optional[str] = None,
            dynamic_img_pad: bool = False,
            device=None,
            dtype=None,
    ) -> None:
        super().__init__()
        dd = {'device': device, 'dtype': dtype}
        check_soft_splits(soft_splits, token_dim)
        self.soft_splits: List[SoftSplit] = [tuple(s) for s in soft_splits]
        stride = math.prod(s[1] for s in self.soft_splits)
        if to_2tuple(patch_size) != (stride, stride):
            raise ValueError(f'patch_size={patch_size} does not match the soft splits {self.soft_splits}, whose '
                             f'strides multiply to {stride}; allowed: patch_size={stride}.')
        if dynamic_img_pad:
            raise ValueError('dynamic_img_pad=True is not supported by T2TEmbed; allowed: False.')
        self.patch_size = (stride, stride)
        self.strict_img_size = strict_img_size
        self.output_fmt = Format(output_fmt) if output_fmt is not None else Format.NLC
        self.img_size, self.grid_size, self.num_patches = None, None, None
        self.set_input_size(img_size)

        check_in_chans(in_chans)
        self.in_chans = in_chans
        self.offsets: List[Tuple[int, int]] = list(shift_offsets(shift_directions)) if spt else []
        self.shift = resolve_shift(self.soft_splits[0][1], shift_ratio) if spt else (0, 0)
        chans = [in_chans * (1 + len(self.offsets))] + [token_dim] * (len(self.soft_splits) - 1)
        self.stages = nn.Sequential(*[
            SoftSplitStage(c, split, token_dim, **(lsa_kwargs or {}), **dd)
            for c, split in zip(chans, self.soft_splits[:-1])])
        k, s, p = self.soft_splits[-1]
        self.final_split = nn.Unfold(k, stride=s, padding=p)
        self.proj = nn.Linear(chans[-1] * k * k, embed_dim, bias=bias, **dd)

    def dynamic_feat_size(self, img_size: Tuple[int, int]) -> Tuple[int, int]:
        size = tuple(img_size)
        for split in self.soft_splits:
            size = _split_size(size, split)
        return size

    def feat_ratio(self, as_scalar: bool = True) -> Union[int, Tuple[int, int]]:
        return self.patch_size[0] if as_scalar else self.patch_size

    def set_input_size(self, img_size: Optional[Union[int, Tuple[int, int]]] = None, patch_size=None) -> None:
        if patch_size is not None and to_2tuple(patch_size) != self.patch_size:
            raise ValueError(
                f'T2TEmbed cannot change patch_size from {self.patch_size}: it is fixed by the soft splits.')
        if img_size is not None:
            grid = self.dynamic_feat_size(to_2tuple(img_size))
            if min(grid) < 1:
                raise ValueError(f'T2TEmbed: img_size={img_size!r}, soft splits {self.soft_splits} give a '
                                 f'{grid[0]}x{grid[1]} token grid; allowed: at least one token per axis.')
            self.img_size, self.grid_size, self.num_patches = to_2tuple(img_size), grid, grid[0] * grid[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, _, H, W = x.shape
        if not torch.jit.is_tracing():  # traced (ONNX export): sizes are traced values; the graph has the example's
            if self.strict_img_size:
                _assert(H == self.img_size[0], f"Input height ({H}) doesn't match model ({self.img_size[0]}).")
                _assert(W == self.img_size[1], f"Input width ({W}) doesn't match model ({self.img_size[1]}).")
            _assert(x.shape[1] == self.in_chans,
                    f'Input has {x.shape[1]} channels; this T2T tokenizer was built for in_chans={self.in_chans}.')
        if self.offsets:
            x = shift_and_concat(x, self.shift, self.offsets)
        x = self.stages(x)
        _, _, H, W = x.shape
        x = self.proj(self.final_split(x).transpose(1, 2))
        if self.output_fmt != Format.NLC:
            x = nchw_to(x.transpose(1, 2).reshape(B, x.shape[-1], *_split_size((H, W), self.soft_splits[-1])),
                        self.output_fmt)
        return x


class ExtraResidualBlock(Block):
    """timm's ``Block`` whose attention branch also carries its normalised input: ``x + Attn(LN x) + LN x`` (the
    reference T2T's bug; the extra term sits inside LayerScale and drop path, as it sits inside the attention there).
    """

    def forward(
            self,
            x: torch.Tensor,
            attn_mask: Optional[torch.Tensor] = None,
            is_causal: bool = False,
    ) -> torch.Tensor:
        y = self.norm1(x)
        x = x + self.drop_path1(self.ls1(self.attn(y, attn_mask=attn_mask, is_causal=is_causal) + y))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class SlT2T(VisionTransformer):
    """T2T-ViT: :class:`T2TEmbed` + timm ``VisionTransformer`` with a fixed sinusoidal position embedding.

    Args:
        soft_splits: ``(kernel, stride, padding)`` per soft split.
        token_dim: Width of the token layers.
        extra_residual: Backbone blocks compute ``x + Attn(LN x) + LN x`` (:class:`ExtraResidualBlock`), the
            reference code's bug; off by default.
        drop_path_schedule: 'timm' (linear ramp, as the reference T2T) or 'constant' (``drop_path_rate`` in every
            block).
        **kwargs: ``VisionTransformer`` arguments and the SL switches of :class:`timm_sl.models.SlArgs`.
    """
    baseline_kwargs: Dict[str, Any] = dict(spt=False, lsa=False)

    def __init__(
            self,
            soft_splits: Sequence[SoftSplit] = ((7, 4, 2), (3, 2, 1), (3, 2, 1)),
            token_dim: int = 64,
            extra_residual: bool = False,
            drop_path_schedule: str = 'timm',
            **kwargs: Any,
    ) -> None:
        sl_args, training = pop_sl_kwargs(type(self), kwargs, drop_path_schedule=drop_path_schedule)
        check_depths(kwargs, 'depth', 'num_heads', positive=('num_heads',))
        check_size(backbone_kwarg(kwargs, VisionTransformer, 'img_size'), 'img_size')
        check_bool('extra_residual', extra_residual)
        check_soft_splits(soft_splits, token_dim)
        first = soft_splits[0]  # the first token layer (or the backbone) attends over the first split's whole grid
        img = backbone_kwarg(kwargs, VisionTransformer, 'img_size')
        check_global_tokens(type(self), patch_grid(img, *first), f'img_size={img!r}, first soft split '
                            f'(kernel, stride, padding)={tuple(first)!r}', ' after it')
        if extra_residual:
            if 'block_fn' in kwargs:
                raise ValueError('block_fn cannot be combined with extra_residual=True; pass extra_residual=False.')
            kwargs['block_fn'] = ExtraResidualBlock
        if 'embed_layer' in kwargs:
            raise ValueError('embed_layer cannot be set on T2T: the T2T tokenizer is its embed layer.')
        lsa_kwargs = sl_args.lsa_kwargs() if sl_args.uses_lsa_layer else None

        def embed_layer(**embed_kwargs: Any) -> T2TEmbed:
            embed_kwargs.pop('norm_layer', None)
            return T2TEmbed(soft_splits=soft_splits, token_dim=token_dim, spt=sl_args.spt, lsa_kwargs=lsa_kwargs,
                            **sl_args.spt_kwargs(), **embed_kwargs)

        kwargs['embed_layer'] = embed_layer
        if sl_args.uses_lsa_layer:
            kwargs['attn_layer'] = LocalitySelfAttention  # timm's Block takes a class: switches set right after
        super().__init__(**kwargs)
        if sl_args.uses_lsa_layer:
            set_lsa_switches(self.blocks, **sl_args.lsa_kwargs())
        self.sl_args = sl_args
        if self.pos_embed is not None:
            # T2T's fixed sin/cos table instead of timm's learned embedding: a buffer (kept in the state dict)
            table = self.fixed_pos_table(self.pos_embed)
            del self.pos_embed
            self.register_buffer('pos_embed', table)
        training.apply(self, self.blocks)

    def fixed_pos_table(self, like: torch.Tensor) -> torch.Tensor:
        """T2T's sin/cos table for the current token grid (plus the prefix tokens it covers), on ``like``'s device."""
        num_tokens = self.patch_embed.num_patches + (0 if self.no_embed_class else self.num_prefix_tokens)
        return sinusoid_position_embedding(num_tokens, self.embed_dim).to(like.device, like.dtype)

    def set_input_size(
            self,
            img_size: Optional[Tuple[int, int]] = None,
            patch_size: Optional[Tuple[int, int]] = None,
    ) -> None:
        """timm's resize, with the fixed position table rebuilt for the new grid.

        timm's ``VisionTransformer.set_input_size`` resamples a *learned* table and stores it as an ``nn.Parameter``;
        T2T's table is a function of the grid, so it is hidden from timm's resize (a None buffer) and rebuilt.
        """
        if img_size is not None:  # refused first, as the constructor refuses it
            check_size(img_size, 'img_size')
            split = self.patch_embed.soft_splits[0]
            check_global_tokens(self, patch_grid(img_size, *split), f'img_size={img_size!r}, first soft split '
                                f'(kernel, stride, padding)={split!r}', ' after it')
        table = self.pos_embed
        self.pos_embed = None
        try:
            super().set_input_size(img_size=img_size, patch_size=patch_size)
        finally:  # also after a refused size: the table of whatever grid the tokenizer now has
            if table is not None:
                self.pos_embed = self.fixed_pos_table(table)

    @torch.jit.ignore
    def no_weight_decay(self) -> Set[str]:
        # the position embedding is a fixed buffer here, not a parameter
        return (super().no_weight_decay() - {'pos_embed'}) | lsa_no_weight_decay(self)


def checkpoint_filter_fn(state_dict: Dict[str, torch.Tensor], model: SlT2T) -> Dict[str, torch.Tensor]:
    """T2T checkpoints are always native: the shared SL adaptation, plus the first token layer's input width when
    ``in_chans`` differs. Its LayerNorm and (bias-free) qkv read ``copies x channels x k x k`` unfolded values, the
    layout :func:`~timm_sl.models._filters.adapt_norm_linear_chans` maps exactly for a replicated input."""
    state_dict = unwrap_state_dict(state_dict)
    prefix = 'patch_embed.stages.0.layer.'
    first = model.patch_embed.stages[0]
    weight = state_dict.get(prefix + 'attn.qkv.weight')
    target = first.layer.attn.qkv.weight
    if weight is not None and weight.shape != target.shape:
        k, copies = first.split[0], 1 + len(model.patch_embed.offsets)
        # the checkpoint's channels are its cfg's (as for SPT stems): a width that reads as another count is another
        # spt / shift_directions / soft split, not channels to adapt
        src_chans = (getattr(model, 'pretrained_cfg', None) or {}).get('input_size', (None,))[0]
        if weight.shape[0] != target.shape[0] or weight.shape[1] % (copies * k * k) or (
                src_chans is not None and weight.shape[1] // (copies * k * k) != src_chans):
            raise ValueError(
                f'{prefix}attn.qkv.weight has shape {tuple(weight.shape)}, which does not fit this model\'s '
                f'{tuple(target.shape)} ({k}x{k} soft split of {copies} cop{"y" if copies == 1 else "ies"} of '
                f'{model.patch_embed.in_chans} channel(s)); allowed: a checkpoint of the same spt, shift_directions, '
                f'soft splits and token_dim over {src_chans} input channel(s), as the pretrained cfg\'s input_size '
                f'declares (another in_chans is adapted)')
        adapt_norm_linear_entries(state_dict, prefix + 'norm1.', prefix + 'attn.qkv.', model.patch_embed.in_chans,
                                  groups=copies, rest=k * k)
        claim_stem_adaptation(model)
    return adapt_sl_state_dict(state_dict, model)


def _create_sl_t2t(variant: str, pretrained: bool = False, **kwargs: Any) -> SlT2T:
    check_bool('pretrained', pretrained)  # pretrained='False' is true: it would load a tag's weights
    out_indices = kwargs.pop('out_indices', 3)
    with asked_for(variant), saved_config_named(kwargs):  # refusals name the model asked for and a config.json
        return build_model_with_cfg(
            SlT2T,
            variant,
            pretrained,
            pretrained_filter_fn=checkpoint_filter_fn,
            feature_cfg=dict(out_indices=out_indices, feature_cls='getter'),
            **kwargs,
        )


default_cfgs = generate_default_cfgs(with_pretrained_tags({
    'sl_t2t_14': sl_cfg(crop_pct=.9, first_conv='patch_embed.stages.0.layer.attn.qkv'),
    'sl_t2t_19': sl_cfg(crop_pct=.9, first_conv='patch_embed.stages.0.layer.attn.qkv'),
    'sl_t2t_24': sl_cfg(crop_pct=.9, first_conv='patch_embed.stages.0.layer.attn.qkv'),
    'sl_t2t_32': small_data_cfg(32, first_conv='patch_embed.stages.0.layer.attn.qkv'),
    'sl_t2t_64': small_data_cfg(64, first_conv='patch_embed.stages.0.layer.attn.qkv'),
}))

# The paper's small-data T2T (Table 2, reference code): backbone dim 256, depth 12, 4 heads, MLP ratio 2, no qkv
# bias; token dim 64; soft splits 3x3 stride 2 (two for 32 px, three for 64 px) for an 8x8 token grid.
_SMALL_T2T = dict(embed_dim=256, depth=12, num_heads=4, mlp_ratio=2, qkv_bias=False, token_dim=64)


@register_model
def sl_t2t_14(pretrained: bool = False, **kwargs: Any) -> SlT2T:
    """SL-T2T-ViT-14 at 224 px (soft splits 7/4, 3/2, 3/2; dim 384, depth 14, 6 heads, MLP ratio 3)."""
    model_args = dict(patch_size=16, embed_dim=384, depth=14, num_heads=6, mlp_ratio=3, qkv_bias=False, token_dim=64,
                      soft_splits=((7, 4, 2), (3, 2, 1), (3, 2, 1)))
    return _create_sl_t2t('sl_t2t_14', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_t2t_32(pretrained: bool = False, **kwargs: Any) -> SlT2T:
    """SL-T2T of the paper's small-dataset setting for 32 px inputs (2 soft splits)."""
    model_args = dict(img_size=32, patch_size=4, soft_splits=((3, 2, 1), (3, 2, 1)), **_SMALL_T2T)
    return _create_sl_t2t('sl_t2t_32', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_t2t_64(pretrained: bool = False, **kwargs: Any) -> SlT2T:
    """SL-T2T of the paper's small-dataset setting for 64 px inputs (3 soft splits)."""
    model_args = dict(img_size=64, patch_size=8, soft_splits=((3, 2, 1), (3, 2, 1), (3, 2, 1)), **_SMALL_T2T)
    return _create_sl_t2t('sl_t2t_64', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_t2t_19(pretrained: bool = False, **kwargs: Any) -> SlT2T:
    """SL-T2T-ViT-19 at 224 px (T2T paper's T2T-ViT-19 with transformer token layers, T2T-ViT_t-19: soft splits 7/4,
    3/2, 3/2, token dim 64; dim 448, depth 19, 7 heads, MLP ratio 3). timm has no T2T-ViT."""
    model_args = dict(patch_size=16, embed_dim=448, depth=19, num_heads=7, mlp_ratio=3, qkv_bias=False, token_dim=64,
                      soft_splits=((7, 4, 2), (3, 2, 1), (3, 2, 1)))
    return _create_sl_t2t('sl_t2t_19', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_t2t_24(pretrained: bool = False, **kwargs: Any) -> SlT2T:
    """SL-T2T-ViT-24 at 224 px (T2T paper's T2T-ViT-24 with transformer token layers, T2T-ViT_t-24: soft splits 7/4,
    3/2, 3/2, token dim 64; dim 512, depth 24, 8 heads, MLP ratio 3). timm has no T2T-ViT."""
    model_args = dict(patch_size=16, embed_dim=512, depth=24, num_heads=8, mlp_ratio=3, qkv_bias=False, token_dim=64,
                      soft_splits=((7, 4, 2), (3, 2, 1), (3, 2, 1)))
    return _create_sl_t2t('sl_t2t_24', pretrained=pretrained, **dict(model_args, **kwargs))

"""Shifted Patch Tokenization (SPT).

Paper: `Vision Transformer for Small-Size Datasets` (Lee, Lee & Song, 2021), Eq. 6-7.

The input is concatenated with copies of itself shifted by ``int(patch * shift_ratio)`` pixels (zero filled, cropped
back to the input size), split into non-overlapping patches, and each flattened patch is layer-normalised and
projected linearly to the embedding width.

``ShiftedPatchEmbed`` is a drop-in ``embed_layer`` for timm's ``VisionTransformer``: it subclasses timm's
``PatchEmbed`` and only swaps its convolutional ``proj`` for a :class:`ShiftedPatchProjection`, so image-size checks,
dynamic padding, output formats, ``feat_ratio``, ``dynamic_feat_size`` and ``set_input_size`` are timm's own.
"""
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, List, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from timm.layers import PatchEmbed, _assert, register_notrace_module, to_2tuple, trunc_normal_

__all__ = ['MAX_GLOBAL_TOKENS', 'SHIFT_DIRECTIONS', 'asked_for', 'owner_name', 'shift_offsets', 'check_global_tokens',
           'check_in_chans', 'check_width', 'check_not_empty', 'check_shift_ratio', 'check_window_tokens', 'check_size',
           'patch_grid', 'resolve_shift', 'shift_and_concat', 'ShiftedPatchProjection', 'ShiftedPatchEmbed',
           'ShiftedPatchMerging']

# Each entry is (dy, dx): the copy samples the input at ``x[i + dy * s, j + dx * s]``, so ``(-1, -1)`` is the
# "left-up" copy (its content moves right and down). The order is the reference implementation's, which fixes the
# layout of the LayerNorm / Linear weights: cardinal = left, right, up, down; diagonal = left-up, right-up,
# left-down, right-down; 'all' = cardinal then diagonal.
_CARDINAL = ((0, -1), (0, 1), (-1, 0), (1, 0))
_DIAGONAL = ((-1, -1), (-1, 1), (1, -1), (1, 1))
SHIFT_DIRECTIONS = {
    'diagonal': _DIAGONAL,
    'cardinal': _CARDINAL,
    'all': _CARDINAL + _DIAGONAL,
}
MAX_SHIFT_RATIO = 1.0

# the model name a user asked timm for (``sl_vit_32``) while it is being built: its refusals name it, not its class
_ASKED_FOR: ContextVar[Optional[str]] = ContextVar('timm_sl_asked_for', default=None)


@contextmanager
def asked_for(name: str) -> Iterator[None]:
    """Within: the refusals of the model being built name ``name`` (a registered name), not the model's class."""
    token = _ASKED_FOR.set(name)
    try:
        yield
    finally:
        _ASKED_FOR.reset(token)


def owner_name(owner: Union[type, str, nn.Module]) -> str:
    """What a refusal names: a name as given; else the registered name the model is being built as (see
    :func:`asked_for`), or a built model's (its pretrained cfg's architecture); else the class's name."""
    if isinstance(owner, str):
        return owner
    asked = _ASKED_FOR.get()
    if asked:
        return asked
    if isinstance(owner, nn.Module):
        architecture = (getattr(owner, 'pretrained_cfg', None) or {}).get('architecture')
        return architecture if isinstance(architecture, str) and architecture else type(owner).__name__
    return owner.__name__


def shift_offsets(shift_directions: str) -> Tuple[Tuple[int, int], ...]:
    """Unit offsets ``(dy, dx)`` of the shifted copies for a direction strategy name.

    Raises:
        ValueError: ``shift_directions`` is not one of :data:`SHIFT_DIRECTIONS`.
    """
    if not isinstance(shift_directions, str) or shift_directions not in SHIFT_DIRECTIONS:
        raise ValueError(
            f'shift_directions={shift_directions!r} is not supported; '
            f'allowed: {", ".join(repr(k) for k in SHIFT_DIRECTIONS)}.')
    return SHIFT_DIRECTIONS[shift_directions]


def check_shift_ratio(shift_ratio: float) -> None:
    """Raise ``ValueError`` unless ``shift_ratio`` is a number in ``(0, 1]`` (the paper explores 0.125 to 1)."""
    if isinstance(shift_ratio, bool) or not isinstance(shift_ratio, (int, float)) \
            or not 0. < shift_ratio <= MAX_SHIFT_RATIO:
        raise ValueError(f'shift_ratio={shift_ratio!r} is out of range; allowed: a number in (0, {MAX_SHIFT_RATIO}].')


def check_in_chans(in_chans: int) -> None:
    """Raise ``ValueError`` unless ``in_chans`` is an int >= 1 (SPT would otherwise build a tokenizer that reads
    no pixel)."""
    check_width('in_chans', in_chans)


def check_width(name: str, value: Any, owner: str = '') -> None:
    """Raise ``ValueError`` unless a channel count or width ``name`` is an int >= 1 (0: a layer of no channel; a
    float or text fails deep in torch). ``owner`` starts the message where the argument is a layer's own."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f'{owner + ": " if owner else ""}{name}={value!r} is invalid; allowed: an int >= 1.')


def check_size(size: Union[int, Tuple[int, int]], name: str = 'patch_size') -> Tuple[int, int]:
    """``size`` (a patch, stride or image size) as a pair; ``ValueError`` naming ``name`` unless it is an int > 0 or
    a pair of them."""
    pair = to_2tuple(size)
    if len(pair) != 2 or not all(isinstance(p, int) and not isinstance(p, bool) and p > 0 for p in pair):
        raise ValueError(f'{name}={size!r} is invalid; allowed: an int > 0 or a pair of them.')
    return pair


def resolve_shift(patch_size: Union[int, Tuple[int, int]], shift_ratio: float) -> Tuple[int, int]:
    """Pixel shift ``(sh, sw) = int(patch * shift_ratio)`` per axis.

    Raises:
        ValueError: the patch size is not positive, the ratio is outside ``(0, 1]`` or rounds down to a zero-pixel
            shift for this patch size.
    """
    check_shift_ratio(shift_ratio)
    patch_size = check_size(patch_size)
    shift = tuple(int(p * shift_ratio) for p in patch_size)
    if min(shift) < 1:
        raise ValueError(
            f'shift_ratio={shift_ratio} with patch size {patch_size} gives a shift of {shift} px; every axis needs '
            f'at least 1 px, so use shift_ratio >= {1. / min(patch_size):g} for this patch size.')
    return shift


# Most tokens one global (non-windowed) attention may attend over: a 128x128 grid. Its attention map is 16384^2
# logits, 1 GiB in fp32 per head and image; every registered configuration is far below (largest: T2T's first soft
# split at 224 px, 56x56).
MAX_GLOBAL_TOKENS = 16384


def patch_grid(
        img_size: Any,
        kernel: Any,
        stride: Any = None,
        padding: int = 0,
        ceil: bool = False,
) -> Optional[Tuple[int, int]]:
    """Token grid of a patch embedding: a ``kernel`` x ``kernel`` window every ``stride`` px (default: ``kernel``,
    non-overlapping) over the image padded by ``padding``; ``ceil`` pads the last partial patch (timm's
    ``dynamic_img_pad``). None without a fixed integer size (left for the backbone to judge)."""
    sizes = [to_2tuple(v) for v in (img_size, kernel, kernel if stride is None else stride)]
    if not all(len(v) == 2 and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in v)
               for v in sizes) or not isinstance(padding, int):
        return None
    (h, w), (kh, kw), (sh, sw) = sizes
    if ceil:
        return -(-h // sh), -(-w // sw)
    return (h + 2 * padding - kh) // sh + 1, (w + 2 * padding - kw) // sw + 1


def check_not_empty(owner: Union[type, str, nn.Module], grid: Optional[Tuple[int, int]], asked: str,
                    where: str = '') -> None:
    """Refuse a grid without a token (an image smaller than one patch or kernel): it would build a model no input of
    that size can run."""
    if grid is not None and min(grid) < 1:
        raise ValueError(f'{owner_name(owner)}: {asked} give a {grid[0]}x{grid[1]} token grid{where}; '
                         f'allowed: at least one token per axis: an img_size at least the patch (or kernel) size.')


def check_global_tokens(
        owner: Union[type, str, nn.Module],
        grid: Optional[Tuple[int, int]],
        asked: str,
        where: str = '',
) -> None:
    """Refuse, before anything is built, a token grid above :data:`MAX_GLOBAL_TOKENS` under global attention (its
    memory grows with the square of the token count). ``owner`` (a class, model or name: :func:`owner_name`) starts
    the message, ``asked``
    names the kwargs that gave ``grid``. A grid without a token is refused too (:func:`check_not_empty`)."""
    check_not_empty(owner, grid, asked, where)
    if grid is None or grid[0] * grid[1] <= MAX_GLOBAL_TOKENS:
        return
    side = int(MAX_GLOBAL_TOKENS ** .5)
    raise ValueError(
        f'{owner_name(owner)}: {asked} give a {grid[0]}x{grid[1]} token grid ({grid[0] * grid[1]} '
        f'tokens){where} '
        f'under global attention; allowed: at most {MAX_GLOBAL_TOKENS} tokens (e.g. a {side}x{side} grid): a smaller '
        f'img_size or a larger patch stride.')


def check_window_tokens(
        owner: Union[type, str, nn.Module],
        feat: Tuple[int, int],
        window: Tuple[int, int],
        asked: str,
) -> None:
    """:func:`check_global_tokens` for windowed attention (Swin): the logits of one head over one image, ``window``
    windows tiling a ``feat`` map (padded to whole windows), held to global attention's bound of
    ``MAX_GLOBAL_TOKENS ** 2``. timm scales Swin's windows with the grid on a resize, so they grow with its square."""
    check_not_empty(owner, feat, asked)
    (h, w), (wh, ww) = feat, window
    logits = -(-h // wh) * -(-w // ww) * (wh * ww) ** 2
    if logits <= MAX_GLOBAL_TOKENS ** 2:
        return
    raise ValueError(
        f'{owner_name(owner)}: {asked} give windows of {wh}x{ww} over a {h}x{w} token map, {logits} '
        f'attention logits per head and image; allowed: at most {MAX_GLOBAL_TOKENS ** 2} (global attention over '
        f'{MAX_GLOBAL_TOKENS} tokens): a smaller img_size or window_size (a resize keeps the windows given).')


def shift_and_concat(x: torch.Tensor, shift: Tuple[int, int], offsets: List[Tuple[int, int]]) -> torch.Tensor:
    """Concatenate ``x`` (NCHW) with its zero-filled shifted copies along channels: ``C -> C * (1 + len(offsets))``.

    The input is padded once and every copy is a crop of that padded tensor.
    """
    sh, sw = shift
    H, W = x.shape[-2:]
    padded = F.pad(x, (sw, sw, sh, sh))
    copies = [x]
    for dy, dx in offsets:
        top, left = sh + dy * sh, sw + dx * sw
        copies.append(padded[:, :, top:top + H, left:left + W])
    return torch.cat(copies, dim=1)


@register_notrace_module  # crops odd sizes: shape-dependent control flow FX cannot trace
class ShiftedPatchProjection(nn.Module):
    """Shift, patchify, LayerNorm and Linear: the SPT replacement for a patch embedding's strided convolution.

    Maps ``(B, C, H, W)`` to ``(B, embed_dim, H // P, W // P)`` like ``nn.Conv2d(C, D, P, stride=P)``, so it can sit
    where timm expects the conv (also for sizes that are not a multiple of ``P``: like the conv, rows and columns past
    the last whole patch form no token, though the last tokens' shifted copies still see them). The flattened patch
    vector is ordered ``(py, px, copy, channel)`` (the reference layout). Parameters are ``weight``
    (``embed_dim x P*P*C*(1+n_shift)``), ``bias`` and ``norm.{weight,bias}``; ``weight`` is the Linear weight, so
    ``first_conv='patch_embed.proj'`` style config keys keep pointing at a weight.

    The forward is the paper's, written out: concatenate the shifted copies, patchify, LayerNorm, Linear. On an H100
    (torch 2.11, fp16 AMP, batch 128) it was faster than a conv-fused form that never materialises the copies, eager
    and compiled, at every SPT / Spool shape of the models (e.g. the 32 px ViT stem: 1.12 vs 2.01 ms per training
    step eager; docs/performance.md), so it is the only form.
    """

    def __init__(
            self,
            in_chans: int,
            embed_dim: int,
            patch_size: Union[int, Tuple[int, int]],
            shift_ratio: float = 0.5,
            shift_directions: str = 'diagonal',
            bias: bool = True,
            norm_eps: float = 1e-5,
            device=None,
            dtype=None,
    ) -> None:
        super().__init__()
        dd = {'device': device, 'dtype': dtype}
        check_in_chans(in_chans)
        check_width('embed_dim', embed_dim)
        self.in_chans = in_chans
        self.embed_dim = embed_dim
        self.patch_size = to_2tuple(patch_size)
        self.shift_ratio = shift_ratio
        self.shift_directions = shift_directions
        self.offsets: List[Tuple[int, int]] = list(shift_offsets(shift_directions))
        self.shift = resolve_shift(self.patch_size, shift_ratio)
        self.num_copies = 1 + len(self.offsets)
        self.patch_dim = self.patch_size[0] * self.patch_size[1] * in_chans * self.num_copies

        self.norm = nn.LayerNorm(self.patch_dim, eps=norm_eps, **dd)
        self.weight = nn.Parameter(torch.empty(embed_dim, self.patch_dim, **dd))
        self.bias = nn.Parameter(torch.empty(embed_dim, **dd)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # timm's ViT initialisation for linear layers
        trunc_normal_(self.weight, std=.02)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def init_weights(self) -> None:
        """Hook called by timm's ViT weight init (``init_weights_vit_*``) for non-Linear modules."""
        self.reset_parameters()

    def patchify(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C', H, W) -> (B, H // P, W // P, P * P * C')`` with the ``(py, px, channel)`` order."""
        B, C, H, W = x.shape
        ph, pw = self.patch_size
        x = x.reshape(B, C, H // ph, ph, W // pw, pw)
        return x.permute(0, 2, 4, 3, 5, 1).reshape(B, H // ph, W // pw, ph * pw * C)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tracing = torch.jit.is_tracing()  # traced (ONNX export): sizes are traced values, not ints to branch on
        if not tracing:  # a traced graph has its channels and sizes from the example input
            _assert(x.shape[1] == self.in_chans,
                    f'Input has {x.shape[1]} channels; this SPT projection was built for in_chans={self.in_chans}.')
            _assert(x.shape[-2] >= self.patch_size[0] and x.shape[-1] >= self.patch_size[1],
                    f'Input of {x.shape[-2]}x{x.shape[-1]} is smaller than one patch {self.patch_size}.')
        x = shift_and_concat(x, self.shift, self.offsets)
        ph, pw = self.patch_size
        H, W = x.shape[-2:]
        if tracing or H % ph or W % pw:  # as a stride-P conv: rows / columns past the last whole patch form no token
            x = x[:, :, :H - H % ph, :W - W % pw]
        x = self.patchify(x)
        x = F.linear(self.norm(x), self.weight, self.bias)
        return x.permute(0, 3, 1, 2)  # NHWC view as NCHW, the layout a conv would return

    def extra_repr(self) -> str:
        return (f'{self.in_chans}, {self.embed_dim}, patch_size={self.patch_size}, shift={self.shift}, '
                f'shift_directions={self.shift_directions!r}, copies={self.num_copies}')


class ShiftedPatchEmbed(PatchEmbed):
    """timm ``PatchEmbed`` with Shifted Patch Tokenization; use as ``VisionTransformer(embed_layer=...)``.

    Accepts every ``PatchEmbed`` argument (``strict_img_size``, ``output_fmt``, ``dynamic_img_pad``, ...) plus
    ``shift_ratio`` and ``shift_directions``. ``norm_layer`` keeps timm's meaning: an optional norm after the
    projection (``post_norm=False`` ignores it); SPT's own LayerNorm lives in ``proj.norm``.

    ``global_tokens``: the host attends over all the grid's tokens at once (``slify`` sets it on a converted ViT):
    ``set_input_size`` then refuses a grid past :data:`MAX_GLOBAL_TOKENS`, as the ``sl_`` models' own resize does.
    """
    global_tokens = False  # unannotated: a class annotation would hide PatchEmbed's from TorchScript

    def __init__(
            self,
            img_size: Optional[Union[int, Tuple[int, int]]] = 224,
            patch_size: Union[int, Tuple[int, int]] = 16,
            in_chans: int = 3,
            embed_dim: int = 768,
            shift_ratio: float = 0.5,
            shift_directions: str = 'diagonal',
            bias: bool = True,
            post_norm: bool = True,
            device=None,
            dtype=None,
            **kwargs,
    ) -> None:
        if not post_norm:  # the host's norm_layer (e.g. Swin's post-embed LayerNorm) is dropped: SPT normalises first
            kwargs['norm_layer'] = None
        # Validate before timm builds anything, so a bad argument fails with our message, not a shape error.
        shift_offsets(shift_directions)
        resolve_shift(patch_size, shift_ratio)
        check_in_chans(in_chans)
        None if img_size is None else check_size(img_size, 'img_size')  # timm: "unsupported operand type(s) for //"
        super().__init__(
            img_size=img_size, patch_size=patch_size, in_chans=in_chans, embed_dim=embed_dim, bias=bias,
            device=device, dtype=dtype, **kwargs)
        # PatchEmbed has no seam for its projection: swap the strided conv for the SPT projection.
        self.proj = ShiftedPatchProjection(
            in_chans, embed_dim, self.patch_size, shift_ratio=shift_ratio, shift_directions=shift_directions,
            bias=bias, device=device, dtype=dtype)

    def set_input_size(
            self,
            img_size: Optional[Union[int, Tuple[int, int]]] = None,
            patch_size: Optional[Union[int, Tuple[int, int]]] = None,
    ) -> None:
        """Change the input size; the patch size is fixed (the LayerNorm and Linear are sized by it)."""
        if patch_size is not None and to_2tuple(patch_size) != self.patch_size:
            raise ValueError(
                f'ShiftedPatchEmbed cannot change patch_size from {self.patch_size} to {to_2tuple(patch_size)}: '
                f'the SPT LayerNorm and projection are sized by P*P*C*copies; only img_size can change.')
        if img_size is not None:
            check_size(img_size, 'img_size')
        if self.global_tokens and img_size is not None:
            check_global_tokens(type(self), patch_grid(img_size, self.patch_size, ceil=self.dynamic_img_pad),
                                f'img_size={img_size!r}, patch_size={self.patch_size!r}')
        super().set_input_size(img_size=img_size)


@register_notrace_module  # pads odd sizes: shape-dependent control flow FX cannot trace
class ShiftedPatchMerging(nn.Module):
    """Spool (paper Eq. 8): SPT as a token-merging layer between stages.

    Merges ``merge_size x merge_size`` tokens with SPT: the token map is shifted by ``merge_size // 2`` tokens (one
    token for the paper's 2x2 merge) in every direction, concatenated, and each merged group is layer-normalised and
    projected to ``out_dim``. Odd map sizes are zero-padded at the bottom / right first, so the output is
    ``ceil(H / 2) x ceil(W / 2)`` like a stride-2 convolution with padding.

    Args:
        in_dim: Channels of the input token map.
        out_dim: Width of the next stage.
        merge_size: Tokens merged per side (2 in the paper).
        shift_directions: As for SPT.
        input_fmt: 'NCHW' (PiT) or 'NHWC' (Swin); the output has the same format.
    """

    def __init__(
            self,
            in_dim: int,
            out_dim: int,
            merge_size: int = 2,
            shift_directions: str = 'diagonal',
            input_fmt: str = 'NCHW',
            device=None,
            dtype=None,
    ) -> None:
        super().__init__()
        if input_fmt not in ('NCHW', 'NHWC'):
            raise ValueError(f"input_fmt={input_fmt!r} is not supported; allowed: 'NCHW', 'NHWC'.")
        for name, value in (('in_dim', in_dim), ('out_dim', out_dim)):  # not the projection's in_chans / embed_dim
            check_width(name, value, 'ShiftedPatchMerging')
        self.in_dim = in_dim
        self.out_dim = out_dim
        self.merge_size = merge_size
        self.channels_last = input_fmt == 'NHWC'
        self.proj = ShiftedPatchProjection(
            in_dim, out_dim, merge_size, shift_ratio=0.5, shift_directions=shift_directions, device=device,
            dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.channels_last:
            x = x.permute(0, 3, 1, 2)
        H, W = x.shape[-2:]
        if torch.jit.is_tracing() or H % self.merge_size or W % self.merge_size:  # traced: the pad follows the size
            x = F.pad(x, (0, (-W) % self.merge_size, 0, (-H) % self.merge_size))
        x = self.proj(x)
        if self.channels_last:
            x = x.permute(0, 2, 3, 1)
        return x

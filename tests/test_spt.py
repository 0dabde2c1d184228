import re
import warnings

import pytest
import torch
import torch.nn.functional as F

from timm.layers import Format
from timm_sl.layers import (
    SHIFT_DIRECTIONS, ShiftedPatchEmbed, ShiftedPatchMerging, ShiftedPatchProjection, resolve_shift, shift_and_concat,
    shift_offsets)


def _expected_copy(x, s, dy, dx):
    """copy[i, j] = x[i + dy*s, j + dx*s] inside the image, 0 outside (written as a plain loop)."""
    H, W = x.shape[-2:]
    out = torch.zeros_like(x)
    for i in range(H):
        for j in range(W):
            si, sj = i + dy * s, j + dx * s
            if 0 <= si < H and 0 <= sj < W:
                out[..., i, j] = x[..., si, sj]
    return out


@pytest.mark.parametrize('directions', list(SHIFT_DIRECTIONS))
@pytest.mark.parametrize('shift', [1, 2])
def test_shift_moves_pixels_for_each_direction(directions, shift):
    x = torch.arange(2 * 2 * 6 * 7, dtype=torch.float32).reshape(2, 2, 6, 7) + 1  # no zero pixel in the input
    offsets = shift_offsets(directions)
    out = shift_and_concat(x, (shift, shift), offsets)
    assert out.shape == (2, 2 * (1 + len(offsets)), 6, 7)
    torch.testing.assert_close(out[:, :2], x)
    for n, (dy, dx) in enumerate(offsets, start=1):
        torch.testing.assert_close(out[:, 2 * n:2 * n + 2], _expected_copy(x, shift, dy, dx))


def test_direction_order_is_the_reference_order():
    # left-up, right-up, left-down, right-down: the first copy's content moves right and down
    assert shift_offsets('diagonal') == ((-1, -1), (-1, 1), (1, -1), (1, 1))
    assert shift_offsets('cardinal') == ((0, -1), (0, 1), (-1, 0), (1, 0))
    assert shift_offsets('all') == shift_offsets('cardinal') + shift_offsets('diagonal')
    x = torch.zeros(1, 1, 4, 4)
    x[0, 0, 1, 1] = 1.
    left_up = shift_and_concat(x, (1, 1), shift_offsets('diagonal'))[0, 1]
    assert left_up[2, 2] == 1 and left_up.sum() == 1


def test_projection_matches_manual_patch_layernorm_linear():
    proj = ShiftedPatchProjection(in_chans=3, embed_dim=8, patch_size=4, shift_ratio=0.5)
    with torch.no_grad():
        proj.norm.weight.normal_()
        proj.norm.bias.normal_()
    x = torch.randn(2, 3, 8, 12)
    out = proj(x)
    assert out.shape == (2, 8, 2, 3)
    shifted = shift_and_concat(x, (2, 2), shift_offsets('diagonal'))  # (2, 15, 8, 12)
    for (gy, gx) in [(0, 0), (1, 2), (0, 1)]:
        patch = shifted[:, :, 4 * gy:4 * gy + 4, 4 * gx:4 * gx + 4]     # (B, C', py, px)
        vec = patch.permute(0, 2, 3, 1).reshape(2, -1)                   # (py, px, channel) order
        expected = F.linear(F.layer_norm(vec, (vec.shape[-1],), proj.norm.weight, proj.norm.bias), proj.weight,
                            proj.bias)
        torch.testing.assert_close(out[:, :, gy, gx], expected, rtol=1e-5, atol=1e-5)


def test_projection_sizes_and_shift():
    proj = ShiftedPatchProjection(in_chans=3, embed_dim=16, patch_size=8, shift_directions='all', shift_ratio=0.25)
    assert proj.shift == (2, 2) and proj.num_copies == 9 and proj.patch_dim == 8 * 8 * 3 * 9
    assert proj.weight.shape == (16, 8 * 8 * 3 * 9)
    assert resolve_shift((4, 8), 0.5) == (2, 4)


@pytest.mark.parametrize('ratio', [0, -0.5, 1.5, float('nan'), '0.5', True])
def test_bad_shift_ratio_names_argument_and_range(ratio):
    with pytest.raises(ValueError, match=r'shift_ratio=.*allowed: a number in \(0, 1'):
        ShiftedPatchEmbed(img_size=32, patch_size=4, embed_dim=8, shift_ratio=ratio)


def test_shift_ratio_that_rounds_to_zero_pixels():
    with pytest.raises(ValueError, match=r'shift of \(0, 0\) px.*shift_ratio >= 0.5'):
        ShiftedPatchEmbed(img_size=32, patch_size=2, embed_dim=8, shift_ratio=0.25)


@pytest.mark.parametrize('name', ['sl_vit_32', 'sl_swin_32', 'sl_cait_32'])
@pytest.mark.parametrize('patch', [0, -4])
def test_non_positive_patch_size_names_argument(name, patch):
    """Was a ZeroDivisionError (0) or advice to use a negative shift_ratio (-4)."""
    import timm
    with pytest.raises(ValueError, match=rf'^patch_size={patch} is invalid; allowed: an int > 0 or a pair of them\.$'):
        timm.create_model(name, patch_size=patch)


@pytest.mark.parametrize('size', ['32', (32, 0), 32.0])
def test_embed_built_by_hand_names_a_bad_img_size(size):
    """ShiftedPatchEmbed(img_size='32') ended on timm's "unsupported operand type(s) for //: 'str' and 'int'"."""
    with pytest.raises(ValueError, match=rf'^img_size={re.escape(repr(size))} is invalid; allowed: an int > 0 or a '
                                         rf'pair of them\.$'):
        ShiftedPatchEmbed(img_size=size, patch_size=4, embed_dim=16)
    assert ShiftedPatchEmbed(img_size=None, patch_size=4, embed_dim=16, strict_img_size=False).img_size is None


@pytest.mark.parametrize('name', ['sl_vit_32', 'sl_pit_32', 'sl_swin_32', 'sl_cait_32', 'sl_t2t_32'])
@pytest.mark.parametrize('chans', [0, -1])
def test_no_input_channel_is_refused(name, chans):
    """SPT with in_chans=0 built a model that read no pixel and answered anyway (T2T: a ZeroDivisionError)."""
    import timm
    with pytest.raises(ValueError, match=rf'^in_chans={chans} is invalid; allowed: an int >= 1\.$'):
        timm.create_model(name, in_chans=chans)


@pytest.mark.parametrize('directions', ['diag', 'DIAGONAL', None, 4])
def test_bad_shift_directions_lists_allowed(directions):
    with pytest.raises(ValueError, match=r"shift_directions=.*allowed: 'diagonal', 'cardinal', 'all'"):
        ShiftedPatchEmbed(img_size=32, patch_size=4, embed_dim=8, shift_directions=directions)


def test_embed_is_a_timm_patch_embed():
    embed = ShiftedPatchEmbed(img_size=32, patch_size=4, in_chans=3, embed_dim=24)
    assert embed.grid_size == (8, 8) and embed.num_patches == 64 and embed.feat_ratio() == 4
    assert embed.dynamic_feat_size((40, 48)) == (10, 12)
    assert embed(torch.randn(2, 3, 32, 32)).shape == (2, 64, 24)
    with pytest.raises(AssertionError, match='Input height'):
        embed(torch.randn(1, 3, 36, 32))


def test_embed_dynamic_size_and_nhwc_output():
    embed = ShiftedPatchEmbed(img_size=32, patch_size=4, embed_dim=24, strict_img_size=False, output_fmt='NHWC')
    assert embed.output_fmt == Format.NHWC
    assert embed(torch.randn(1, 3, 40, 24)).shape == (1, 10, 6, 24)
    padded = ShiftedPatchEmbed(img_size=32, patch_size=4, embed_dim=24, strict_img_size=False, dynamic_img_pad=True)
    assert padded(torch.randn(1, 3, 30, 33)).shape == (1, 8 * 9, 24)


def test_embed_set_input_size():
    embed = ShiftedPatchEmbed(img_size=32, patch_size=4, embed_dim=24)
    weight = embed.proj.weight.clone()
    embed.set_input_size(img_size=64)
    assert embed.grid_size == (16, 16) and embed.num_patches == 256
    assert embed(torch.randn(1, 3, 64, 64)).shape == (1, 256, 24)
    torch.testing.assert_close(embed.proj.weight, weight)
    with pytest.raises(ValueError, match='cannot change patch_size from'):
        embed.set_input_size(patch_size=8)


def test_embed_gradients_reach_all_parameters():
    embed = ShiftedPatchEmbed(img_size=16, patch_size=4, embed_dim=8)
    embed(torch.randn(2, 3, 16, 16)).square().sum().backward()
    for name, p in embed.named_parameters():
        if name.startswith('proj.'):
            assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_projection_under_autocast_normalises_in_float32():
    # constant patches (zero variance) next to large values: autocast keeps the LayerNorm in float32, only the Linear
    # runs in bfloat16, so the result stays within bfloat16 rounding of the float32 one
    proj = ShiftedPatchProjection(3, 16, 4)
    x = torch.full((2, 3, 16, 16), 200.)
    x[..., 8:, :] = torch.rand(2, 3, 8, 16) * 255
    with torch.autocast('cpu', dtype=torch.bfloat16):
        out = proj(x)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), proj(x), rtol=2e-2, atol=2e-2)
    half = ShiftedPatchProjection(3, 16, 4).to(torch.bfloat16)
    assert half(x.bfloat16()).dtype == torch.bfloat16


def test_scripted_projection_equals_eager():
    proj = ShiftedPatchProjection(3, 16, 4)
    scripted = torch.jit.script(proj)
    x = torch.randn(1, 3, 8, 8)
    torch.testing.assert_close(scripted(x), proj(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('size,expected', [(8, 4), (7, 4)])
def test_spool_merging_shapes_nchw_and_nhwc(size, expected):
    from timm_sl.layers import ShiftedPatchMerging
    merge = ShiftedPatchMerging(16, 32)
    assert merge.proj.shift == (1, 1) and merge.proj.patch_dim == 2 * 2 * 16 * 5
    x = torch.randn(2, 16, size, size)
    out = merge(x)
    assert out.shape == (2, 32, expected, expected)
    nhwc = ShiftedPatchMerging(16, 32, input_fmt='NHWC')
    nhwc.load_state_dict(merge.state_dict())
    torch.testing.assert_close(nhwc(x.permute(0, 2, 3, 1)), out.permute(0, 2, 3, 1))
    with pytest.raises(ValueError, match="input_fmt='NLC' is not supported"):
        ShiftedPatchMerging(16, 32, input_fmt='NLC')


def test_resize_channel_axis():
    from timm_sl.models._filters import resize_channel_axis
    w = torch.arange(12.).reshape(2, 3, 2)  # channel axis 1 of size 3
    torch.testing.assert_close(resize_channel_axis(w, 1, 1), w.sum(1, keepdim=True))
    torch.testing.assert_close(resize_channel_axis(w, 1, 1, 'mean'), w.mean(1, keepdim=True))
    four = resize_channel_axis(w, 1, 4)
    assert four.shape == (2, 4, 2)
    torch.testing.assert_close(four[:, 3], w[:, 0] * 0.75)
    # tiling to a multiple keeps the response to a replicated input: the weights still sum to the old sum
    torch.testing.assert_close(resize_channel_axis(w, 1, 6).sum(1), w.sum(1))


def test_traced_spt_and_spool_follow_the_input_size():
    """Traced (as the TorchScript ONNX export traces) at a size that needs no crop or pad, without a TracerWarning:
    the graph still crops (SPT) and pads (Spool) the sizes that need it, as the eager layers do."""
    torch.manual_seed(0)
    proj, merge = ShiftedPatchProjection(3, 8, 4), ShiftedPatchMerging(8, 16)
    with warnings.catch_warnings():
        warnings.simplefilter('error', torch.jit.TracerWarning)
        traced_proj = torch.jit.trace(proj, torch.randn(1, 3, 16, 16))
        traced_merge = torch.jit.trace(merge, torch.randn(1, 8, 8, 8))
    for layer, traced, x in ((proj, traced_proj, torch.randn(2, 3, 18, 19)),
                             (merge, traced_merge, torch.randn(2, 8, 7, 5))):
        with torch.no_grad():
            torch.testing.assert_close(traced(x), layer(x))


def test_one_patch_by_hand_with_the_layer_norm_epsilon_of_the_reference():
    """One 2x2 grey patch, shift 1, written out from the paper's Eq. 6: per pixel (py, px) the original then the
    left-up, right-up, left-down, right-down copies; a LayerNorm of torch's default epsilon (1e-5, the reference
    code's nn.LayerNorm) over those 20 values. The pixels are ~1e-3, so their variance is far below the epsilon and
    another epsilon (timm's 1e-6) would change every token."""
    proj = ShiftedPatchProjection(in_chans=1, embed_dim=20, patch_size=2)
    with torch.no_grad():
        proj.weight.copy_(torch.eye(20))
        proj.bias.zero_()
    a, b, c, d = 1e-3, -2e-3, 3e-3, 5e-4
    x = torch.tensor([[a, b], [c, d]]).view(1, 1, 2, 2)
    vec = torch.tensor([a, 0, 0, 0, d,    # (0, 0): the right-down copy brings d here
                        b, 0, 0, c, 0,    # (0, 1): left-down brings c
                        c, 0, b, 0, 0,    # (1, 0): right-up brings b
                        d, a, 0, 0, 0])   # (1, 1): left-up brings a
    expected = (vec - vec.mean()) / torch.sqrt(vec.var(unbiased=False) + 1e-5)
    torch.testing.assert_close(proj(x).flatten(), expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('input_fmt', ['NCHW', 'NHWC'])
def test_spool_pads_an_odd_map_at_the_bottom_and_right(input_fmt):
    """A 5x3 map merges as the 6x4 map with a zero row below and a zero column on the right (timm's PatchMerging
    rule): its token (0, 0) covers the map's first two rows and columns, not a padded row or column."""
    torch.manual_seed(0)
    merge = ShiftedPatchMerging(4, 8, input_fmt=input_fmt)
    x = torch.randn(2, 4, 5, 3)
    padded = torch.cat([torch.cat([x, torch.zeros(2, 4, 1, 3)], 2), torch.zeros(2, 4, 6, 1)], 3)
    if input_fmt == 'NHWC':
        x, padded = x.permute(0, 2, 3, 1), padded.permute(0, 2, 3, 1)
    out = merge(x)
    assert out.shape[1:3] == ((3, 2) if input_fmt == 'NHWC' else (8, 3))
    torch.testing.assert_close(out, merge(padded))


def test_spool_of_merge_size_3_is_the_definition_written_out():
    """``ShiftedPatchMerging(merge_size=3)`` against its definition, written as loops: the map zero-padded at the
    bottom / right to a multiple of 3, copies shifted by ``3 // 2 = 1`` token in the four diagonal directions (zero
    filled), each 3x3 group flattened as (py, px, copy, channel), LayerNorm, Linear. No test built a merge size but
    2, where a shift of ``merge_size`` or of 2 and a group's layout read another way pass unnoticed."""
    torch.manual_seed(0)
    C, D, H, W = 2, 5, 7, 8
    merge = ShiftedPatchMerging(C, D, merge_size=3)
    with torch.no_grad():
        for p in merge.parameters():
            p.copy_(torch.randn_like(p))  # an affine LayerNorm too: the vector's order shows
    x = torch.randn(1, C, H, W)
    padded = torch.zeros(1, C, 9, 9)
    padded[..., :H, :W] = x
    copies = [padded] + [_expected_copy(padded, 1, dy, dx) for dy, dx in ((-1, -1), (-1, 1), (1, -1), (1, 1))]
    expected = torch.zeros(1, D, 3, 3)
    norm = merge.proj.norm
    for gi in range(3):
        for gj in range(3):
            vec = torch.stack([copies[k][0, c, 3 * gi + py, 3 * gj + px] for py in range(3) for px in range(3)
                               for k in range(5) for c in range(C)])
            vec = (vec - vec.mean()) / torch.sqrt(vec.var(unbiased=False) + norm.eps) * norm.weight + norm.bias
            expected[0, :, gi, gj] = merge.proj.weight @ vec + merge.proj.bias
    assert merge.proj.shift == (1, 1) and merge.proj.patch_dim == 3 * 3 * C * 5
    out = merge(x)
    assert out.shape == (1, D, 3, 3)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    nhwc = ShiftedPatchMerging(C, D, merge_size=3, input_fmt='NHWC')
    nhwc.load_state_dict(merge.state_dict())
    torch.testing.assert_close(nhwc(x.permute(0, 2, 3, 1)), expected.permute(0, 2, 3, 1), rtol=1e-4, atol=1e-4)

"""Family-agnostic SPT / LSA layers."""
from .lsa import LocalitySelfAttention, LsaMixin, check_temp_ratio, lsa_attn_bias, lsa_no_weight_decay
from .spt import (
    SHIFT_DIRECTIONS, ShiftedPatchEmbed, ShiftedPatchMerging, ShiftedPatchProjection, adapt_spt_in_chans,
    check_shift_ratio, resize_channel_axis, resolve_shift, shift_and_concat, shift_offsets)

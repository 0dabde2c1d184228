"""Family-agnostic SPT / LSA layers."""
from .lsa import LocalitySelfAttention, LsaMixin, check_temp_ratio, lsa_attn_bias, lsa_no_weight_decay
from .lsa_cait import LocalityClassAttn, LocalityTalkingHeadAttn, class_attn_switches
from .lsa_window import LocalityWindowAttention, window_attn_bias
from .spool import ShiftedTokenPooling
from .spt import (
    SHIFT_DIRECTIONS, ShiftedPatchEmbed, ShiftedPatchMerging, ShiftedPatchProjection, check_shift_ratio, resolve_shift,
    shift_and_concat, shift_offsets)

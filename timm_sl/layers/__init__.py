"""Family-agnostic SPT / LSA layers, one module per attention kind in timm's idiom. How timm's own modules become these
layers (the conversion table) lives outside, in :mod:`timm_sl.convert`."""
from .lsa import (
    LocalitySelfAttention, LsaMixin, check_temp_ratio, diagonal_bias, lsa_attn_bias, lsa_no_weight_decay,
    mask_diagonal_, set_lsa_switches)
from .lsa_cait import LocalityClassAttn, LocalityTalkingHeadAttn, class_attn_switches, mix_heads
from .lsa_window import LocalitySwinBlock, LocalityWindowAttention, window_attn_bias, window_lsa_pattern
from .spool import ShiftedTokenPooling
from .spt import (
    SHIFT_DIRECTIONS, ShiftedPatchEmbed, ShiftedPatchMerging, ShiftedPatchProjection, check_in_chans, check_shift_ratio,
    check_size, resolve_shift, shift_and_concat, shift_offsets)
from .sl_args import (
    SL_ARG_NAMES, SlArgs, check_bool, check_model_kwargs, check_optional_bool, check_options_used, unused_options,
    with_switches, without_unused_options)

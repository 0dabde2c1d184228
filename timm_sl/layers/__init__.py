"""Family-agnostic SPT / LSA layers, each with one ``from_timm`` constructor from the timm module it replaces, and
the one conversion path (:mod:`.convert`) the families and ``slify`` share."""
from .lsa import LocalitySelfAttention, LsaMixin, TimmLsaMixin, check_temp_ratio, lsa_attn_bias, lsa_no_weight_decay
from .lsa_cait import LocalityClassAttn, LocalityTalkingHeadAttn, class_attn_switches
from .lsa_window import LocalityWindowAttention, window_attn_bias
from .spool import ShiftedTokenPooling
from .spt import (
    SHIFT_DIRECTIONS, ShiftedPatchEmbed, ShiftedPatchMerging, ShiftedPatchProjection, check_shift_ratio, resolve_shift,
    shift_and_concat, shift_offsets)
from .sl_args import SL_ARG_NAMES, SlArgs, check_bool, check_optional_bool
from .convert import (
    SL_FORMS, Replacement, convert_modules, plan_replacements, replace_modules, resample_pos_embed)

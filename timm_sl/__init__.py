"""timm_sl: Shifted Patch Tokenization and Locality Self-Attention for timm.

Importing this package registers the ``sl_`` models with timm's registry. Once the package is installed this
happens by itself when ``timm`` is imported (see ``_timm_sl_autoload``), so ``import timm_sl`` is optional.
"""
from .version import __version__
from .layers import LocalitySelfAttention, ShiftedPatchEmbed, ShiftedPatchProjection
from .models import (
    SL_ARG_NAMES, SlArgs, SlCait, SlPoolingVisionTransformer, SlSwinTransformer, SlT2T, SlVisionTransformer)
from .slify import SlifyError, plan_slify, slify, slify_refusal

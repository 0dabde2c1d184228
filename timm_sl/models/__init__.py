"""``sl_`` model families; importing this package registers them with timm."""
from ._filters import built_as, warm_start
from ._sl_args import SL_ARG_NAMES, SlArgs
from .sl_vit import SlVisionTransformer
from .sl_pit import SlPoolingVisionTransformer
from .sl_swin import SlSwinTransformer
from .sl_cait import SlCait
from .sl_t2t import SlT2T
from . import sl_cait, sl_pit, sl_swin, sl_t2t, sl_vit
from ._cfgs import check_tag_models

# a tag file's entry for a model none of the families registers would be ignored, silently
check_tag_models(name for family in (sl_vit, sl_pit, sl_swin, sl_cait, sl_t2t) for name in family.default_cfgs)

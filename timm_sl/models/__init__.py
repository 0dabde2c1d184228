"""``sl_`` model families; importing this package registers them with timm."""
from ._filters import warm_start
from ._sl_args import SL_ARG_NAMES, SlArgs
from .sl_vit import SlVisionTransformer
from .sl_pit import SlPoolingVisionTransformer
from .sl_swin import SlSwinTransformer
from .sl_cait import SlCait
from .sl_t2t import SlT2T

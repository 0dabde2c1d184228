"""``sl_`` model families; importing this package registers them with timm."""
from ._sl_args import SL_ARG_NAMES, SlArgs
from .sl_vit import SlVisionTransformer
from .sl_pit import SlPoolingVisionTransformer
from .sl_swin import SlSwinTransformer
from .sl_cait import SlCait
from .sl_t2t import SlT2T
from .slify_entry import slify as _slify_entry  # noqa: F401  (registers the `slify` model; last: it uses the families)

"""Default (pretrained) cfg helpers shared by the ``sl_`` families."""
from typing import Any, Dict

from timm.data import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD

__all__ = ['CIFAR100_MEAN', 'CIFAR100_STD', 'TINY_IMAGENET_MEAN', 'TINY_IMAGENET_STD', 'PAPER', 'sl_cfg',
           'small_data_cfg']

# Per-channel statistics of the training splits (the values the reference training code normalises with).
CIFAR100_MEAN = (0.5071, 0.4865, 0.4409)
CIFAR100_STD = (0.2673, 0.2564, 0.2762)
TINY_IMAGENET_MEAN = (0.4802, 0.4481, 0.3975)
TINY_IMAGENET_STD = (0.2770, 0.2691, 0.2821)

PAPER = dict(paper_ids='arXiv:2112.13492', paper_name='Vision Transformer for Small-Size Datasets')


def sl_cfg(url: str = '', **kwargs: Any) -> Dict[str, Any]:
    """ImageNet-style cfg for the 224 px ``sl_`` models (DeiT evaluation settings)."""
    return {
        'url': url, 'num_classes': 1000, 'input_size': (3, 224, 224), 'pool_size': None,
        'crop_pct': .875, 'interpolation': 'bicubic', 'fixed_input_size': True,
        'mean': IMAGENET_DEFAULT_MEAN, 'std': IMAGENET_DEFAULT_STD,
        'first_conv': 'patch_embed.proj', 'classifier': 'head', 'license': 'apache-2.0',
        **PAPER, **kwargs,
    }


def small_data_cfg(img_size: int, **kwargs: Any) -> Dict[str, Any]:
    """cfg of the paper's small-dataset configurations.

    32 px: CIFAR-100 (100 classes, CIFAR-100 statistics; also used for CIFAR-10 / SVHN with ``num_classes``).
    64 px: Tiny-ImageNet (200 classes). No centre crop at evaluation (``crop_pct=1``), as in the reference code.
    """
    if img_size == 32:
        data = dict(num_classes=100, mean=CIFAR100_MEAN, std=CIFAR100_STD)
    elif img_size == 64:
        data = dict(num_classes=200, mean=TINY_IMAGENET_MEAN, std=TINY_IMAGENET_STD)
    else:
        raise ValueError(f'img_size={img_size} has no small-data cfg; allowed: 32, 64.')
    return sl_cfg(input_size=(3, img_size, img_size), crop_pct=1.0, **{**data, **kwargs})

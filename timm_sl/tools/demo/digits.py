"""scikit-learn's bundled handwritten digits (1797 8x8 images, 10 classes) as a torch dataset of PIL images.

The images ship inside scikit-learn, so the demo needs no download. They are upscaled (bicubic) to the model's input
size and replicated to 3 channels, then go through timm's own train / eval transforms.
"""
from typing import Callable, List, Optional, Tuple, Union

import numpy as np
import torch
from PIL import Image

__all__ = ['load_digits_split', 'DigitsDataset', 'DIGITS_MEAN', 'DIGITS_STD']

# per-channel statistics of the upscaled digits (measured on the whole set, grey replicated to RGB)
DIGITS_MEAN = (0.309, 0.309, 0.309)
DIGITS_STD = (0.349, 0.349, 0.349)


def load_digits_split(val_fraction: float = 0.2, seed: int = 0, limit: Optional[int] = None
                      ) -> Tuple[List[Tuple[Image.Image, int]], List[Tuple[Image.Image, int]]]:
    """Stratified train / val split of the digits as ``(8x8 PIL image, label)`` pairs.

    The shuffled images are taken in rounds of one per digit, so ``limit`` images hold every digit equally often
    (within one) and the validation split (the first ``val_fraction`` of them) holds each digit equally often too,
    or distinct digits when it is smaller than ten images; the training split then holds every digit.

    Raises:
        ImportError: scikit-learn is missing, with the install command.
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError("the demo needs scikit-learn's bundled digits: pip install 'timm-sl[demo]'") from e
    if not 0. < val_fraction < 1.:
        raise ValueError(f'val_fraction={val_fraction} is out of range; allowed: a number in (0, 1).')
    digits = load_digits()
    pixels = (digits.images / 16. * 255.).round().astype(np.uint8)
    order = np.random.default_rng(seed).permutation(len(pixels))
    labels = digits.target[order]
    rank = np.zeros(len(order), dtype=np.int64)  # how many images of the same digit come before, in shuffled order
    for digit in np.unique(labels):
        rank[labels == digit] = np.arange(np.count_nonzero(labels == digit))
    order = order[np.argsort(rank, kind='stable')]  # rounds of one image per digit, each round in shuffled order
    if limit is not None:
        order = order[:limit]
    samples = [(Image.fromarray(pixels[i], mode='L').convert('RGB'), int(digits.target[i])) for i in order]
    num_val = max(1, int(round(len(samples) * val_fraction)))
    return samples[num_val:], samples[:num_val]


class DigitsDataset(torch.utils.data.Dataset):
    """``(image, label)`` pairs upscaled to ``img_size`` (an int, or ``(height, width)``), grey for ``in_chans=1``
    (RGB otherwise), and passed through ``transform``."""

    def __init__(self, samples: List[Tuple[Image.Image, int]], img_size: Union[int, Tuple[int, int]],
                 transform: Callable, in_chans: int = 3) -> None:
        height, width = (img_size, img_size) if isinstance(img_size, int) else img_size
        mode = 'L' if in_chans == 1 else 'RGB'
        self.samples = [(img.resize((width, height), Image.BICUBIC).convert(mode), label) for img, label in samples]
        self.transform = transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        img, label = self.samples[index]
        return self.transform(img), label

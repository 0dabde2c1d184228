"""How many training images one CPU core prepares per second with a recipe's augmentation, as train.py makes them.

A sweep of small models is fed by its data workers: every image is read, decoded and augmented on a CPU core
(train.py's loader: RandomResizedCrop, flip, AutoAugment, ToTensor + Normalize, Random Erasing; Mixup / CutMix run on
the batch, on the training device). This times that per-image work in one process, one image after another, so
``cores x img/s`` bounds what a machine's workers can feed its trainers; each stage is also timed alone, to say
which one costs: read + decode; + crop + flip (no colour, no erasing); the recipe as train.py runs it on CUDA
(the prefetcher normalises and erases on the GPU); the recipe as it runs on a CPU (all of it in the worker).

Examples::

    timm-sl prepare-fashion-mnist fm --limit 2000
    python benchmarks/loader.py fm/train --recipe recipes/fashion_mnist.yaml
"""
import argparse
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch

from timm.data import ImageDataset, create_transform
from timm_sl.tools.arg_types import OneLineParser, positive_int
from timm_sl.tools.files import read_text
from timm_sl.tools.train_args import read_recipe


def train_transform(recipe: Dict[str, Any], **overrides: Any):
    """timm's training transform with a recipe's settings, as train.py's ``create_loader`` builds it. Without the
    prefetcher (train.py on a CPU) normalisation and erasing run here; with it (``use_prefetcher=True``, train.py's
    default on CUDA) they run on the GPU and the worker hands over uint8 arrays."""
    settings = dict(
        input_size=tuple(recipe.get('input_size', (3, 224, 224))),
        is_training=True,
        no_aug=recipe.get('no_aug', False),
        scale=recipe.get('scale'),
        ratio=recipe.get('ratio'),
        hflip=recipe.get('hflip', 0.5),
        vflip=recipe.get('vflip', 0.),
        color_jitter=recipe.get('color_jitter', 0.4),
        auto_augment=recipe.get('aa'),
        interpolation=recipe.get('train_interpolation', 'random'),
        mean=tuple(recipe.get('mean', (0.485, 0.456, 0.406))),
        std=tuple(recipe.get('std', (0.229, 0.224, 0.225))),
        re_prob=recipe.get('reprob', 0.),
        re_mode=recipe.get('remode', 'pixel'),
        re_count=recipe.get('recount', 1),
    )
    settings.update(overrides)
    return create_transform(**settings)


def images_per_second(dataset: ImageDataset, count: int) -> float:
    """Items of ``dataset`` (read, decode, transform) per second, taken in order, cycling."""
    start = time.perf_counter()
    for i in range(count):
        dataset[i % len(dataset)]
    return count / (time.perf_counter() - start)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """The options, with the folder and the recipe read: ``args.recipe`` is the recipe's settings (a mapping).
    Anything that cannot be timed is argparse's one line, exit status 2, before any image is read."""
    parser = OneLineParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('folder', help='an ImageFolder split (class folders of images), e.g. fm/train')
    parser.add_argument('--recipe', required=True, help="a recipe YAML (the transform's settings)")
    parser.add_argument('--images', type=positive_int, default=2000, help='images timed per stage')
    args = parser.parse_args(argv)
    if not Path(args.folder).is_dir():
        parser.error(f'{args.folder} is not a folder; allowed: an ImageFolder split (class folders).')
    try:
        ImageDataset(args.folder)
    except RuntimeError as e:  # timm's reader: no image in the class folders
        parser.error(f'{args.folder}: {str(e).splitlines()[0]}; allowed: an ImageFolder split (class folders of '
                     f'images)')
    try:
        read_text(args.recipe, 'a recipe YAML (train.py --config)')  # missing, a folder: one line naming it
        args.recipe_path, args.recipe = args.recipe, read_recipe(args.recipe)  # reproduce's reader of recipes
    except (OSError, ValueError) as e:
        parser.error(f'--recipe {e}')
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    recipe = args.recipe
    bare = dict(auto_augment=None, color_jitter=None, re_prob=0., use_prefetcher=True)
    stages = {
        'read + decode': None,
        'crop + flip': train_transform(recipe, **bare),
        'recipe, CUDA (prefetcher)': train_transform(recipe, use_prefetcher=True),
        'recipe, CPU (--no-prefetcher)': train_transform(recipe),
    }
    print(f'{args.folder}: {args.images} images per stage, one process, 1 thread, CPU pid {os.getpid()}')
    for label, transform in stages.items():
        dataset = ImageDataset(args.folder, transform=transform)
        images_per_second(dataset, min(50, args.images))  # warm the page cache and the code paths
        rate = images_per_second(dataset, args.images)
        print(f'{label:32s} {rate:8.0f} img/s per core')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())

"""Train an ``sl_`` model and its same-configuration baseline side by side with timm's own training pieces.

Runs repeat exactly for a seed: everything the demo draws from is seeded per run (python ``random``, which timm's
random-resized crop uses; numpy; torch, for weight init, dropout and drop-path; the DataLoader's shuffling
generator). Loading runs in the main process (no workers), so there are no worker seeds to set.
"""
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, TextIO, Tuple

import torch
from tqdm import tqdm

import timm
from timm.data import create_transform
from timm.loss import LabelSmoothingCrossEntropy
from timm.optim import create_optimizer_v2
from timm.scheduler import create_scheduler_v2
from timm.layers import to_2tuple
from timm.utils import accuracy, random_seed

from ...layers import with_switches
from ..profile import count_params
from .digits import DIGITS_MEAN, DIGITS_STD, DigitsDataset, load_digits_split

__all__ = ['DemoResult', 'run_demo', 'check_demo_kwargs']

DIGIT_CLASSES = 10
MIN_IMAGES = 20  # --limit: two images per class, so that the validation split is not a single image


@dataclass
class DemoResult:
    """Per variant: top-1 and mean training loss per epoch for each seed, training throughput, parameter count."""
    name: str
    kwargs: Dict[str, Any]
    top1: List[List[float]] = field(default_factory=list)
    train_loss: List[List[float]] = field(default_factory=list)
    train_img_s: List[float] = field(default_factory=list)
    params: int = 0
    train_images: int = 0
    val_images: int = 0

    @property
    def best(self) -> List[float]:
        return [max(run) for run in self.top1]

    @property
    def mean_curve(self) -> List[float]:
        return [statistics.fmean(epoch) for epoch in zip(*self.top1)]


def _loaders(img_size: Tuple[int, int], in_chans: int, batch_size: int, seed: int, limit: Optional[int]):
    train_samples, val_samples = load_digits_split(seed=0, limit=limit)  # one fixed split: seeds vary the training
    mean, std = DIGITS_MEAN[:in_chans], DIGITS_STD[:in_chans]
    train_tf = create_transform(img_size, is_training=True, scale=(0.8, 1.0), ratio=(0.9, 1.1), hflip=0.,
                                color_jitter=0., interpolation='bicubic', mean=mean, std=std)
    eval_tf = create_transform(img_size, is_training=False, crop_pct=1.0, interpolation='bicubic', mean=mean, std=std)
    generator = torch.Generator().manual_seed(seed)
    train = torch.utils.data.DataLoader(DigitsDataset(train_samples, img_size, train_tf, in_chans),
                                        batch_size=batch_size, shuffle=True,
                                        drop_last=len(train_samples) > batch_size, generator=generator)
    val = torch.utils.data.DataLoader(DigitsDataset(val_samples, img_size, eval_tf, in_chans), batch_size=256)
    return train, val


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, 'isatty', None)
    return bool(isatty and isatty())


@torch.no_grad()
def evaluate(model: torch.nn.Module, loader) -> float:
    model.eval()
    correct, total = 0., 0
    for images, target in loader:
        correct += accuracy(model(images), target, topk=(1,))[0].item() * images.shape[0] / 100.
        total += images.shape[0]
    return 100. * correct / total


def train_variant(result: DemoResult, model_name: str, seed: int, epochs: int, batch_size: int, lr: float,
                  limit: Optional[int], stream: TextIO) -> None:
    """One seeded run of one variant; appends its curves to ``result``.

    Progress: a tqdm bar (ETA, loss, last validation top-1) when ``stream`` is a terminal, else one plain line per
    epoch (no carriage-return floods in logs); epochs are counted from 1.
    """
    random_seed(seed)  # python random, numpy, torch
    model = timm.create_model(model_name, num_classes=DIGIT_CLASSES, **result.kwargs)
    img_size = to_2tuple(result.kwargs.get('img_size') or model.pretrained_cfg['input_size'][1:])
    train_loader, val_loader = _loaders(img_size, result.kwargs.get('in_chans', 3), batch_size, seed, limit)
    result.train_images, result.val_images = len(train_loader.dataset), len(val_loader.dataset)
    optimizer = create_optimizer_v2(model, 'adamw', lr=lr, weight_decay=0.05)
    scheduler, _ = create_scheduler_v2(optimizer, 'cosine', num_epochs=epochs, warmup_epochs=min(1, epochs - 1),
                                       warmup_lr=lr / 10, min_lr=lr / 100)
    loss_fn = LabelSmoothingCrossEntropy(smoothing=0.1)
    result.params = count_params(model)
    label = f'{result.name} seed {seed}'
    live = _is_terminal(stream)
    bar = tqdm(total=epochs * len(train_loader), desc=label, file=stream, disable=not live, leave=False,
               unit='step', dynamic_ncols=True)
    curve, losses, seen, train_time = [], [], 0, 0.
    for epoch in range(epochs):
        model.train()
        start = time.perf_counter()
        total_loss = 0.
        for images, target in train_loader:
            loss = loss_fn(model(images), target)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            seen += images.shape[0]
            total_loss += loss.item()
            bar.update()
            bar.set_postfix_str(f'epoch {epoch + 1} of {epochs}, loss {loss.item():.3f}'
                                + (f' val top-1 {curve[-1]:.2f}' if curve else ''), refresh=False)
        train_time += time.perf_counter() - start
        scheduler.step(epoch + 1)
        curve.append(evaluate(model, val_loader))
        losses.append(total_loss / len(train_loader))
        if not math.isfinite(losses[-1]):  # NaN weights: its top-1 (argmax of NaN logits) would read as a result
            bar.close()
            raise ValueError(f'{label} diverged in epoch {epoch + 1} of {epochs} (train loss {losses[-1]}), so its '
                             f'top-1 would be a number for a broken model; allowed: a lower --lr (given: {lr:g})')
        if not live:
            print(f'{label} epoch {epoch + 1} of {epochs}: train loss {losses[-1]:.3f}, '
                  f'val top-1 {curve[-1]:.2f} ({time.perf_counter() - start:.1f} s)', file=stream, flush=True)
    bar.close()
    result.top1.append(curve)
    result.train_loss.append(losses)
    result.train_img_s.append(seen / train_time)


def run_demo(model_name: str = 'sl_vit_32', epochs: int = 10, seeds: int = 1, batch_size: int = 64, lr: float = 1e-3,
             model_kwargs: Optional[Dict[str, Any]] = None, limit: Optional[int] = None,
             stream: TextIO = sys.stderr, seed: int = 0, label: str = 'SL') -> List[DemoResult]:
    """Train ``model_name`` (SL) and its baseline with seeds ``seed, ..., seed + seeds - 1``; returns their results
    (SL first). The same arguments give the same numbers. ``label`` names the first model in progress lines and its
    result: what ``model_kwargs`` make it (``S`` with ``lsa=False``, ``ST`` with ``lsa_mask=False``, ...).

    Raises:
        ValueError: ``model_name`` is not an ``sl_`` model (it has no baseline to compare with).
    """
    model_kwargs = dict(model_kwargs or {})
    baseline_kwargs = check_demo_kwargs(model_name, model_kwargs, limit)
    model_kwargs.pop('num_classes', None)  # the digits' 10, set by train_variant
    baseline = with_switches(model_kwargs, baseline_kwargs)
    results = [DemoResult(label, model_kwargs), DemoResult('baseline', baseline)]
    for run_seed in range(seed, seed + seeds):
        for result in results:
            train_variant(result, model_name, run_seed, epochs, batch_size, lr, limit, stream)
    return results


def _architecture(model: torch.nn.Module) -> List[Any]:
    return [type(m).__name__ for m in model.modules()] + [(k, tuple(v.shape)) for k, v in model.state_dict().items()]


def check_demo_kwargs(model_name: str, model_kwargs: Dict[str, Any], limit: Optional[int] = None) -> Dict[str, Any]:
    """Check what the demo is asked to train before any training; returns the baseline's kwargs.

    Raises:
        ValueError: not an ``sl_`` model; ``num_classes`` other than the digits' 10; ``in_chans`` other than 1 or 3
            (the digits are grey, replicated to RGB for 3); kwargs that make the SL model its own baseline; a
            ``limit`` below :data:`MIN_IMAGES`.
    """
    if limit is not None and limit < MIN_IMAGES:
        raise ValueError(f'--limit {limit} is too few images; allowed: at least {MIN_IMAGES} (two per digit; the '
                         f'validation split is a fifth of them)')
    if model_kwargs.get('num_classes', DIGIT_CLASSES) != DIGIT_CLASSES:
        raise ValueError(f"num_classes={model_kwargs['num_classes']!r} is not allowed in the demo: the digits have "
                         f"{DIGIT_CLASSES} classes (the demo sets it)")
    if model_kwargs.get('in_chans', 3) not in (1, 3):
        raise ValueError(f"in_chans={model_kwargs['in_chans']!r} is not allowed in the demo; allowed: 1 (grey digits) "
                         f"or 3 (grey replicated to RGB)")
    kwargs = {k: v for k, v in model_kwargs.items() if k != 'num_classes'}
    probe = timm.create_model(model_name, **kwargs)
    baseline_kwargs = getattr(type(probe), 'baseline_kwargs', None)
    if baseline_kwargs is None:
        raise ValueError(f'{model_name} is not an sl_ model (no spt/lsa baseline to compare with); allowed: the '
                         f'models of timm.list_models("sl_*")')
    baseline = timm.create_model(model_name, **with_switches(kwargs, baseline_kwargs))
    if _architecture(probe) == _architecture(baseline):
        given = ' '.join(f'{k}={v}' for k, v in model_kwargs.items())
        raise ValueError(f'--model-kwargs {given} make {model_name} its own baseline (SPT and LSA off), so there is '
                         f'nothing to compare; allowed: kwargs that keep SPT or LSA on')
    return dict(baseline_kwargs)

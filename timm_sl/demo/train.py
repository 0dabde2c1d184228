"""Train an ``sl_`` model and its same-configuration baseline side by side with timm's own training pieces."""
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, TextIO

import torch

import timm
from timm.data import create_transform
from timm.loss import LabelSmoothingCrossEntropy
from timm.optim import create_optimizer_v2
from timm.scheduler import create_scheduler_v2
from timm.utils import accuracy

from ..profile import count_params
from .digits import DIGITS_MEAN, DIGITS_STD, DigitsDataset, load_digits_split

__all__ = ['DemoResult', 'run_demo']


@dataclass
class DemoResult:
    """Per variant: top-1 per epoch for each seed, training throughput, parameter count."""
    name: str
    kwargs: Dict[str, Any]
    top1: List[List[float]] = field(default_factory=list)
    train_img_s: List[float] = field(default_factory=list)
    params: int = 0

    @property
    def best(self) -> List[float]:
        return [max(run) for run in self.top1]

    @property
    def mean_curve(self) -> List[float]:
        return [statistics.fmean(epoch) for epoch in zip(*self.top1)]


def _progress(stream: TextIO, label: str, step: int, total: int, loss: float) -> None:
    width = 24
    filled = int(width * step / max(total, 1))
    stream.write(f'\r{label} [{"#" * filled}{"." * (width - filled)}] {step}/{total} loss {loss:.3f}')
    if step == total:
        stream.write('\n')
    stream.flush()


def _loaders(img_size: int, batch_size: int, seed: int, limit: Optional[int]):
    train_samples, val_samples = load_digits_split(seed=0, limit=limit)
    train_tf = create_transform(img_size, is_training=True, scale=(0.8, 1.0), ratio=(0.9, 1.1), hflip=0.,
                                color_jitter=0., interpolation='bicubic', mean=DIGITS_MEAN, std=DIGITS_STD)
    eval_tf = create_transform(img_size, is_training=False, crop_pct=1.0, interpolation='bicubic',
                               mean=DIGITS_MEAN, std=DIGITS_STD)
    generator = torch.Generator().manual_seed(seed)
    train = torch.utils.data.DataLoader(DigitsDataset(train_samples, img_size, train_tf), batch_size=batch_size,
                                        shuffle=True, drop_last=len(train_samples) > batch_size, generator=generator)
    val = torch.utils.data.DataLoader(DigitsDataset(val_samples, img_size, eval_tf), batch_size=256)
    return train, val


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
    torch.manual_seed(seed)
    model = timm.create_model(model_name, num_classes=10, **result.kwargs)
    img_size = model.pretrained_cfg['input_size'][-1]
    train_loader, val_loader = _loaders(img_size, batch_size, seed, limit)
    optimizer = create_optimizer_v2(model, 'adamw', lr=lr, weight_decay=0.05)
    scheduler, _ = create_scheduler_v2(optimizer, 'cosine', num_epochs=epochs, warmup_epochs=min(1, epochs - 1),
                                       warmup_lr=lr / 10, min_lr=lr / 100)
    loss_fn = LabelSmoothingCrossEntropy(smoothing=0.1)
    result.params = count_params(model)
    curve, seen, train_time = [], 0, 0.
    for epoch in range(epochs):
        model.train()
        start = time.perf_counter()
        for step, (images, target) in enumerate(train_loader, start=1):
            loss = loss_fn(model(images), target)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            seen += images.shape[0]
            _progress(stream, f'{result.name:<9} seed {seed} epoch {epoch + 1}/{epochs}', step, len(train_loader),
                      loss.item())
        train_time += time.perf_counter() - start
        scheduler.step(epoch + 1)
        curve.append(evaluate(model, val_loader))
    result.top1.append(curve)
    result.train_img_s.append(seen / train_time)


def run_demo(model_name: str = 'sl_vit_32', epochs: int = 10, seeds: int = 1, batch_size: int = 64, lr: float = 1e-3,
             model_kwargs: Optional[Dict[str, Any]] = None, limit: Optional[int] = None,
             stream: TextIO = sys.stderr) -> List[DemoResult]:
    """Train ``model_name`` (SL) and its baseline for every seed; returns their results (SL first)."""
    model_kwargs = dict(model_kwargs or {})
    probe = timm.create_model(model_name, **model_kwargs)
    results = [DemoResult('SL', model_kwargs), DemoResult('baseline', {**model_kwargs, **type(probe).baseline_kwargs})]
    del probe
    for seed in range(seeds):
        for result in results:
            train_variant(result, model_name, seed, epochs, batch_size, lr, limit, stream)
    return results

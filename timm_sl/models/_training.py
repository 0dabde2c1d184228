"""Training-behaviour switches shared by the ``sl_`` families: how the position embedding and class token start, and
how stochastic depth is spread over the blocks.

Neither changes the architecture (modules, state-dict keys and parameter count stay the same); both only change what
a model trained from scratch starts from and how it is regularised. The paper's small-data configurations
(``sl_*_32``, ``sl_*_64``) default to the authors' reference code, which produced Table 2; the 224 px ones and the
classes themselves default to timm:

======================  ==========  ===================================================================================
kwarg                   values      meaning
======================  ==========  ===================================================================================
``pos_embed_init``      'timm'      timm's init (ViT: position embedding trunc-normal std .02, class token N(0, 1e-6))
                        'normal'    position embedding and class token drawn from N(0, 1), as the reference code
``drop_path_schedule``  'timm'      the backbone's own schedule (ViT, T2T, PiT: linear ramp from 0 over all blocks;
                                    CaiT: constant in the self-attention layers, none in the class-attention layers)
                        'constant'  ``drop_path_rate`` in every residual branch of every block, class attention included
======================  ==========  ===================================================================================
"""
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import torch
from torch import nn

from timm.layers import DropPath

__all__ = ['DROP_PATH_SCHEDULES', 'POS_EMBED_INITS', 'TrainingInit', 'check_choice', 'check_drop_path_rate',
           'set_drop_path']

POS_EMBED_INITS = ('timm', 'normal')
DROP_PATH_SCHEDULES = ('timm', 'constant')
_DROP_PATH_NAMES = ('drop_path', 'drop_path1', 'drop_path2')  # timm's names: Cait's blocks, then ViT's Block


def check_choice(name: str, value: Any, allowed: Sequence[str]) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is one of the strings ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f'{name}={value!r} is not supported; allowed: {", ".join(map(repr, allowed))}.')


def check_drop_path_rate(rate: Any) -> None:
    """Raise ``ValueError`` unless ``rate`` is a number in [0, 1) (at 1 every branch is dropped and scaled by 1/0)."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0. <= rate < 1.:
        raise ValueError(f'drop_path_rate={rate!r} is invalid; allowed: a number in [0, 1).')


def set_drop_path(blocks: Iterable[nn.Module], rate: float) -> None:
    """Give every residual branch of ``blocks`` stochastic depth ``rate`` (``nn.Identity`` at 0, as timm does).

    timm computes its schedule inside each backbone's constructor (ViT's and PiT's linear ramps, CaiT's none in the
    class-attention layers) with no argument to choose another, so the blocks' drop-path modules are replaced after
    construction; they hold no parameters, so the state dict is unchanged.
    """
    for block in blocks:
        names = [name for name in _DROP_PATH_NAMES if hasattr(block, name)]
        if not names:
            raise TypeError(f'{type(block).__name__} has no drop-path module ({", ".join(_DROP_PATH_NAMES)}).')
        for name in names:
            setattr(block, name, DropPath(rate) if rate > 0. else nn.Identity())


@dataclass(frozen=True)
class TrainingInit:
    """Validated training-behaviour switches (see the module docstring) and the backbone's ``drop_path_rate``;
    built before the backbone, so bad values fail before anything is constructed."""
    pos_embed_init: str = 'timm'
    drop_path_schedule: str = 'timm'
    drop_path_rate: float = 0.

    def __post_init__(self) -> None:
        check_choice('pos_embed_init', self.pos_embed_init, POS_EMBED_INITS)
        check_choice('drop_path_schedule', self.drop_path_schedule, DROP_PATH_SCHEDULES)
        check_drop_path_rate(self.drop_path_rate)

    def apply(self, model: nn.Module, blocks: Iterable[nn.Module]) -> None:
        """Re-initialise ``model``'s ``pos_embed`` / ``cls_token`` and re-set the stochastic depth of ``blocks`` (all
        of the model's blocks, in order) as asked; a no-op for 'timm' values. Call at the end of the constructor."""
        if self.pos_embed_init == 'normal':
            with torch.no_grad():
                for name in ('pos_embed', 'cls_token'):
                    param = getattr(model, name, None)
                    if isinstance(param, nn.Parameter):
                        nn.init.normal_(param, std=1.)
        if self.drop_path_schedule == 'constant':
            set_drop_path(blocks, self.drop_path_rate)

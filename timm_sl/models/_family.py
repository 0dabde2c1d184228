"""What every ``sl_`` family class shares: taking its SL and training-behaviour switches out of the model kwargs, and
the LSA temperatures' exclusion from weight decay. (A family class's first base stays its timm backbone, the class
``slify`` gives a converted model, so these are helpers rather than a mixin.)"""
from typing import Any, Callable, Dict, Optional, Set, Tuple

import torch
from torch import nn

from ..layers import SlArgs, lsa_no_weight_decay
from ._training import TrainingInit

__all__ = ['pop_sl_kwargs', 'no_weight_decay_with_lsa']


def pop_sl_kwargs(
        model_cls: type,
        kwargs: Dict[str, Any],
        pos_embed_init: str = 'timm',
        drop_path_schedule: str = 'timm',
        spt_pool: Optional[bool] = None,
) -> Tuple[SlArgs, TrainingInit]:
    """Remove the SL switches from ``kwargs`` (checking every kwarg is one ``model_cls`` accepts) and validate them and
    the training-behaviour switches, before the backbone builds anything. The family applies the returned
    :class:`TrainingInit` at the end of its constructor. ``spt_pool``: the family's Spool switch, if it has one."""
    sl_args = SlArgs.pop_from(kwargs, model_cls, spt_pool)
    training = TrainingInit(pos_embed_init, drop_path_schedule, kwargs.get('drop_path_rate', 0.))
    return sl_args, training


def no_weight_decay_with_lsa(backbone: type) -> Callable[[nn.Module], Set[str]]:
    """A ``no_weight_decay`` method for a family class: ``backbone``'s names plus every learnable LSA temperature."""
    @torch.jit.ignore
    def no_weight_decay(self: nn.Module) -> Set[str]:
        return backbone.no_weight_decay(self) | lsa_no_weight_decay(self)
    return no_weight_decay

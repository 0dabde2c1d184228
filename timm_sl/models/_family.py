"""What every ``sl_`` family class shares: taking its SL and training-behaviour switches out of the model kwargs,
converting the timm modules it has no constructor seam for, and the LSA temperatures' exclusion from weight decay."""
from typing import Any, Dict, Iterable, Optional, Set, Tuple

import torch

from ..layers import SlArgs, lsa_no_weight_decay, plan_replacements, replace_modules
from ._training import TrainingInit

__all__ = ['SlFamilyMixin']


class SlFamilyMixin:
    """Mixed in before the timm backbone class: ``class SlX(SlFamilyMixin, TimmX)``."""
    sl_args: SlArgs

    @classmethod
    def pop_sl_kwargs(
            cls,
            kwargs: Dict[str, Any],
            pos_embed_init: str = 'timm',
            drop_path_schedule: str = 'timm',
    ) -> Tuple[SlArgs, TrainingInit]:
        """Remove the SL switches from ``kwargs`` (checking every kwarg is one ``cls`` accepts) and validate them and
        the training-behaviour switches, before the backbone builds anything."""
        sl_args = SlArgs.pop_from(kwargs, cls)
        training = TrainingInit(pos_embed_init, drop_path_schedule, kwargs.get('drop_path_rate', 0.))
        return sl_args, training

    def convert_timm_modules(self, kinds: Iterable[str], forms: Optional[Dict[type, Any]] = None) -> None:
        """Replace the backbone's timm modules of ``kinds`` by their SL forms through the conversion path shared
        with ``slify`` (for layers timm builds inline, with no constructor argument to swap them)."""
        replace_modules(self, plan_replacements(self, self.sl_args, tuple(kinds), forms))

    @torch.jit.ignore
    def no_weight_decay(self) -> Set[str]:
        return super().no_weight_decay() | lsa_no_weight_decay(self)

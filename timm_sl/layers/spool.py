"""Spool for PiT: SPT as the pooling between stages (paper Eq. 8).

Swin's form of Spool is :class:`~timm_sl.layers.ShiftedPatchMerging` (its merging has no class token).
"""
from typing import Tuple

import torch
from torch import nn

from .spt import ShiftedPatchMerging, check_width

__all__ = ['ShiftedTokenPooling']


class ShiftedTokenPooling(nn.Module):
    """Spool for PiT (paper Eq. 8): SPT merges 2x2 tokens of the map, the class token gets its own Linear."""

    def __init__(
            self,
            in_feature: int,
            out_feature: int,
            shift_directions: str = 'diagonal',
            device=None,
            dtype=None,
    ) -> None:
        super().__init__()
        for name, value in (('in_feature', in_feature), ('out_feature', out_feature)):  # not SPT's in_chans / embed_dim
            check_width(name, value, 'ShiftedTokenPooling')
        self.merge = ShiftedPatchMerging(
            in_feature, out_feature, merge_size=2, shift_directions=shift_directions, device=device, dtype=dtype)
        self.fc = nn.Linear(in_feature, out_feature, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor, cls_token: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.merge(x), self.fc(cls_token)

"""Model-kwargs checks of the ``sl_`` families; the SL switches themselves (:class:`SlArgs`) live in
:mod:`timm_sl.layers.sl_args` (shared with :func:`timm_sl.slify`) and are re-exported here."""
from typing import Any, Dict

from ..layers.sl_args import (  # noqa: F401  (re-exported: the families' and users' import path)
    SL_ARG_NAMES, SlArgs, accepted_kwargs, check_bool, check_model_kwargs, check_optional_bool)

__all__ = ['SlArgs', 'SL_ARG_NAMES', 'accepted_kwargs', 'check_bool', 'check_depths', 'check_model_kwargs',
           'check_optional_bool']


def check_depths(kwargs: Dict[str, Any], *names: str, per_stage: bool = False) -> None:
    """Check depth kwargs before timm builds anything: each an int >= 0, or (``per_stage``) a non-empty sequence of
    them, all such sequences of one length. Raises ``ValueError`` naming the value and what is allowed."""
    lengths = {}
    for name in names:
        if name not in kwargs:
            continue
        value = kwargs[name]
        items = value if per_stage and isinstance(value, (tuple, list)) else [value]
        if not items or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in items):
            shape = 'a non-empty tuple of ints >= 0 (one per stage)' if per_stage else 'an int >= 0'
            raise ValueError(f'{name}={value!r} is invalid; allowed: {shape}.')
        if per_stage:
            lengths[name] = len(items)
    if len(set(lengths.values())) > 1:
        raise ValueError(f'per-stage kwargs disagree on the number of stages: {lengths}; allowed: equal lengths.')

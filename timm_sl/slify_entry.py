"""``slify``: a registered model that is :func:`timm_sl.slify` of any timm model, for timm's scripts.

``train.py --model slify --model-kwargs base=vit_small_patch16_224 lsa_mask=False`` trains the SL version of
``vit_small_patch16_224`` with no code. Every kwarg that is not an SL switch (``num_classes``, ``img_size``,
``drop_path_rate``, ``features_only``, ...) and ``pretrained`` go to the base model, so the base's own pretrained cfg
(input size, mean / std, crop) is the model's, and train.py's data config follows the base.

The entry is not named ``sl_*``: it is not one configuration but a converter, so it stays out of the ``sl_`` model
set (``timm-sl list``, the per-model test matrix) whose members have fixed architectures and ``baseline_kwargs``, and
it lives next to the converter, not among the families (the converter is built from ``timm_sl.convert`` and
``timm_sl.layers`` only; the entry loads converted weights through the families' checkpoint adaptation).
"""
from typing import Any, Dict, Optional

import torch
from torch import nn

from timm.models import load_pretrained, register_model

from .layers.sl_args import check_bool
from .models._filters import adapt_sl_state_dict, keep_fitting_classifier
from .models._saved_config import names_saved_config
from .slify import convert_model, converted_weights, slify as convert

__all__ = []


@register_model
@names_saved_config  # a refusal of an exported folder's model_args names its config.json
def slify(pretrained: bool = False, base: Optional[str] = None, **kwargs: Any) -> nn.Module:
    """SPT / LSA (and Spool) on the timm model named by ``base`` (see :func:`timm_sl.slify`)."""
    if isinstance(base, nn.Module):  # its repr is the whole model, a line per layer
        raise ValueError(f'base={type(base).__name__}(...) is invalid: the slify model builds its base from a name; '
                         f'allowed: a timm model name, or timm_sl.slify(model) to convert a model instance.')
    if not isinstance(base, str) or not base:
        raise ValueError(f'base={base!r} is invalid; the slify model needs the timm model to convert, e.g. '
                         f'--model-kwargs base=vit_small_patch16_224 (allowed: a timm model name).')
    if base == 'slify' or base.split('.')[0] == 'slify':
        raise ValueError("base='slify' is invalid; allowed: a timm model name other than slify.")
    check_bool('pretrained', pretrained)  # pretrained='False' is true: it would load (or download) weights
    if kwargs.get('pretrained_cfg') is None:  # the entry's own (empty) cfg: the base resolves its own
        kwargs.pop('pretrained_cfg', None)
    exported = pretrained and 'base' in (kwargs.get('pretrained_model_args') or {})
    # weights of a converted model: timm passes the saved model_args of a `timm-sl export`, base included, when it
    # loads one from local-dir: / hf-hub:; a base's cfg (pretrained_cfg_overlay=dict(file=...)) may point at some too
    weights = converted_weights(base, **kwargs) if pretrained and not exported else None
    if not exported and weights is None:  # the base's own weights (read above: not again), or none
        return convert_model(base, pretrained, kwargs.pop('spt_pool', None), kwargs.pop('spt_post_norm', False),
                             kwargs, check_weights=False)
    # build and convert the base, then load them as timm loads pretrained weights, adapted as the sl_ families adapt
    # theirs (classifier for another num_classes, SPT for another in_chans, position embedding for another img_size)
    # timm loads pretrained weights into the whole model, then wraps it for features_only: so does the entry
    features = {k: kwargs.pop(k) for k in _FEATURE_KWARGS if k in kwargs} if kwargs.get('features_only') else {}
    model = convert(base, pretrained=False, **kwargs)
    if exported:
        cfg = kwargs.get('pretrained_cfg')
        cfg = cfg.to_dict() if hasattr(cfg, 'to_dict') else dict(cfg)
    else:  # the state dict already read, from the base's resolved cfg
        cfg = {**model.pretrained_cfg, 'state_dict': weights, 'source': ''}
    # the base was built with timm's default in_chans: its cfg's input channels, unless given
    in_chans = kwargs.get('in_chans', (model.pretrained_cfg.get('input_size') or (3,))[0])
    def filter_fn(state_dict: Dict[str, torch.Tensor], model: nn.Module) -> Dict[str, torch.Tensor]:
        keep_fitting_classifier(state_dict, model, cfg)  # timm decides on this cfg, not the model's
        return adapt_sl_state_dict(state_dict, model)
    load_pretrained(model, pretrained_cfg=cfg, num_classes=model.num_classes, in_chans=in_chans, filter_fn=filter_fn)
    if features:
        wrapped = convert(base, pretrained=False, **kwargs, **features)
        _copy_into_features(wrapped, model)
        return wrapped
    return model


_FEATURE_KWARGS = ('features_only', 'out_indices', 'feature_cls', 'feature_cfg')


def _key_in(key: str, source: Dict[str, Any]) -> Optional[str]:
    """The key of a whole model's state dict that ``key`` of its features_only wrapper names: timm's wrappers hold the
    model as ``model.`` (FeatureGetterNet) or ``body.`` (FeatureHookNet), or its top-level modules, a Sequential's
    children flattened as ``name_child``."""
    for prefix in ('', 'model.', 'body.'):
        if not key.startswith(prefix):
            continue
        inner = key[len(prefix):]
        head, _, rest = inner.partition('.')
        for candidate in [inner] + [f'{head[:i]}.{head[i + 1:]}.{rest}' for i, c in enumerate(head) if c == '_']:
            if candidate in source:
                return candidate
    return None


def _copy_into_features(features: nn.Module, model: nn.Module) -> None:
    source = model.state_dict()
    state = {}
    for key in features.state_dict():
        found = _key_in(key, source)
        if found is None:
            raise ValueError(f'features_only: {type(features).__name__} entry {key!r} has no counterpart in the '
                             f'loaded model; allowed: load it without features_only and use forward_intermediates')
        state[key] = source[found]
    features.load_state_dict(state)

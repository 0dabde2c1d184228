"""The paper's Table 2 vocabulary, torch-free: families, rows (variants) and their model kwargs, datasets and their
recipes, learning rates and the paper's numbers. ``reproduce``, ``release`` and the benchmarks read it from here.

``TABLE2`` (Tiny-ImageNet: 64 px, 200 classes): MACs in millions (the paper's "FLOPs" column counts
multiply-accumulates), parameters in millions, throughput in images/s (RTX 2080 Ti, batch 128).
``TABLE2_TOP1``: best top-1 accuracy (%) per family, variant and dataset. Variant keys: ``'base'``, ``'sl'`` and, for
the pooling families (PiT, Swin), ``'sl_no_spool'`` (SPT + LSA with the baseline's pooling).
"""
from typing import Any, Dict, Optional, Tuple

__all__ = ['FAMILIES', 'VARIANTS', 'VARIANT_LABELS', 'LEARNING_RATES', 'DATASETS', 'TABLE2_COLUMNS', 'TABLE2',
           'TABLE2_TOP1', 'paper_top1', 'learning_rate', 'family_of', 'variant_of', 'model_name', 'table2_row',
           'switches_label']

FAMILIES = ('vit', 't2t', 'cait', 'pit', 'swin')

# Table 2 rows of each family as model kwargs; each baseline equals the model class's ``baseline_kwargs`` (tested)
# and is written out here so that planning needs no torch
VARIANTS: Dict[str, Dict[str, Dict[str, Any]]] = {
    'vit': {'base': dict(spt=False, lsa=False), 'sl': {}},
    't2t': {'base': dict(spt=False, lsa=False), 'sl': {}},
    'cait': {'base': dict(spt=False, lsa=False), 'sl': {}},
    'pit': {'base': dict(spt=False, lsa=False, spt_pool=False), 'sl_no_spool': dict(spt_pool=False), 'sl': {}},
    'swin': {'base': dict(spt=False, lsa=False, spt_pool=False), 'sl_no_spool': dict(spt_pool=False), 'sl': {}},
}
VARIANT_LABELS = {'base': 'baseline', 'sl_no_spool': 'SL w/o Spool', 'sl': 'SL'}

# the paper's learning rates (section 4.1): ViT 3e-3, every other family the recipe's 1e-3
LEARNING_RATES = {'vit': 3e-3}
DEFAULT_LR = 1e-3

# dataset -> (recipe file, image size of the model configuration): the paper's Table 2 columns in its order, then data
# sets the paper has no column for (Fashion-MNIST: real images that need no download, timm_sl.tools.fashion_mnist)
DATASETS: Dict[str, Tuple[str, int]] = {
    'cifar10': ('cifar10.yaml', 32), 'cifar100': ('cifar100.yaml', 32), 'svhn': ('svhn.yaml', 32),
    'tiny-imagenet': ('tiny_imagenet.yaml', 64), 'fashion-mnist': ('fashion_mnist.yaml', 32),
}
TABLE2_COLUMNS = ('cifar10', 'cifar100', 'svhn', 'tiny-imagenet')

# model -> variant -> (MACs M, params M, throughput img/s)
TABLE2: Dict[str, Dict[str, Tuple[float, float, float]]] = {
    'sl_vit_64': {'base': (189.8, 2.8, 8593), 'sl': (199.2, 2.9, 7697)},
    'sl_t2t_64': {'base': (643.0, 6.7, 3388), 'sl': (671.4, 7.1, 2943)},
    'sl_cait_64': {'base': (613.8, 9.1, 3138), 'sl': (623.3, 9.2, 2967)},
    'sl_pit_64': {'base': (279.2, 7.1, 7583), 'sl_no_spool': (280.4, 7.1, 6632), 'sl': (322.9, 8.7, 5981)},
    'sl_swin_64': {'base': (242.3, 7.1, 6804), 'sl_no_spool': (247.0, 7.1, 6384), 'sl': (284.9, 10.2, 5711)},
}

# family -> variant -> top-1 % in TABLE2_COLUMNS order
_TOP1_ROWS: Dict[str, Dict[str, Tuple[float, float, float, float]]] = {
    'vit': {'base': (93.58, 73.81, 97.82, 57.07), 'sl': (94.53, 76.92, 97.79, 61.07)},
    't2t': {'base': (95.30, 77.00, 97.90, 60.57), 'sl': (95.57, 77.36, 97.91, 61.83)},
    'cait': {'base': (94.91, 76.89, 98.13, 64.37), 'sl': (95.81, 80.32, 98.28, 67.18)},
    'pit': {'base': (94.24, 74.99, 97.83, 60.25), 'sl_no_spool': (94.96, 77.08, 97.94, 60.31),
            'sl': (95.88, 79.00, 97.93, 62.91)},
    'swin': {'base': (94.46, 76.87, 97.72, 60.87), 'sl_no_spool': (95.30, 78.13, 97.88, 62.70),
             'sl': (95.93, 79.99, 97.92, 64.95)},
}

# family -> variant -> dataset -> top-1 %
TABLE2_TOP1: Dict[str, Dict[str, Dict[str, float]]] = {
    family: {variant: dict(zip(TABLE2_COLUMNS, row)) for variant, row in variants.items()}
    for family, variants in _TOP1_ROWS.items()
}


def paper_top1(family: str, variant: str, dataset: str) -> Optional[float]:
    """Table 2's top-1 for a row, or None where the paper has none (an unknown dataset, a variant it did not run)."""
    return TABLE2_TOP1.get(family, {}).get(variant, {}).get(dataset)


def learning_rate(family: str) -> float:
    """The paper's peak learning rate of a family."""
    return LEARNING_RATES.get(family, DEFAULT_LR)


def model_name(family: str, dataset: str) -> str:
    """The ``sl_`` configuration a family trains on a dataset (``sl_vit_32`` for CIFAR, ``sl_vit_64`` for
    Tiny-ImageNet)."""
    return f'sl_{family}_{DATASETS[dataset][1]}'


def family_of(model: str) -> str:
    """The family of an ``sl_`` model name (``sl_pit_32`` -> ``pit``); any other name is its own family."""
    parts = model.split('_')
    return parts[1] if model.startswith('sl_') and len(parts) > 1 else model


def variant_of(family: str, model_kwargs: Dict[str, Any]) -> str:
    """The Table 2 row that ``model_kwargs`` make for ``family`` (``num_classes`` aside); ``custom`` for any other."""
    arch = _switches_filled(family, {k: v for k, v in model_kwargs.items() if k != 'num_classes'})
    for variant, kwargs in VARIANTS.get(family, {}).items():
        if arch == _switches_filled(family, kwargs):
            return variant
    return 'custom'


def _switches_filled(family: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """``kwargs`` with the switches they leave out at the values the models give them (``spt`` / ``lsa`` on,
    ``spt_pool`` following ``spt`` in the pooling families): ``spt=False lsa=False`` builds PiT's baseline too."""
    filled = dict(kwargs, spt=kwargs.get('spt', True), lsa=kwargs.get('lsa', True))
    if 'sl_no_spool' in VARIANTS.get(family, {}):
        filled['spt_pool'] = filled['spt'] if kwargs.get('spt_pool') is None else kwargs['spt_pool']
    return filled


def model_switches(model: Any) -> Optional[Dict[str, Any]]:
    """The SPT / LSA switches a model was built with (``sl_args``, and ``spt_pool`` where it pools), as
    :func:`switches_label` takes them; None for a model without them."""
    sl_args = getattr(model, 'sl_args', None)
    if sl_args is None:
        return None
    return {**sl_args.to_dict(), 'spt_pool': getattr(model, 'spt_pool', sl_args.spt)}


def switches_label(model_kwargs: Dict[str, Any]) -> str:
    """What a model's SPT / LSA switches make it, as reports and charts name it: ``SL``, ``baseline`` or the paper's
    ablation tag (``S``, ``L``, ``ST``, ``SM``, ...), plus ``w/o Spool`` / ``+ Spool`` where ``spt_pool`` differs from
    ``spt``. The Table 2 rows' kwargs give :data:`VARIANT_LABELS`. Imports the core (torch) when called.

    Raises:
        ValueError: a switch has a value the models refuse.
    """
    from timm_sl.layers.sl_args import SlArgs
    kwargs = dict(model_kwargs)
    sl_args = SlArgs.pop_from(kwargs)
    tag = sl_args.ablation_tag()
    label = {'SL': 'SL', 'base': 'baseline'}.get(tag, tag)
    spool = kwargs.get('spt_pool')
    if spool is None or spool == sl_args.spt:
        return label
    return label + (' w/o Spool' if sl_args.spt else ' + Spool')


def table2_row(model: Optional[str], model_kwargs: Dict[str, Any], dataset: Optional[str]) -> Optional[Tuple[str, str]]:
    """``(family, variant)`` of the Table 2 row a trained model is, or None for a configuration the paper did not
    train: only the paper's small-data model of ``dataset`` (:func:`model_name`: ``sl_vit_32`` for CIFAR,
    ``sl_vit_64`` for Tiny-ImageNet) with a row's kwargs (``num_classes`` aside) is one; ``sl_vit_tiny`` is a ViT but
    no row of the paper's, and neither is ``sl_vit_32`` with ``depth=1``."""
    family = family_of(model or '')
    if dataset not in DATASETS or family not in VARIANTS or model != model_name(family, dataset):
        return None
    variant = variant_of(family, model_kwargs)
    return None if variant == 'custom' else (family, variant)

"""Default (pretrained) cfg helpers shared by the ``sl_`` families.

Pretrained tags (``sl_vit_32.cifar100``, ...) are data, not code: ``pretrained.json`` beside this file maps each tag to
its weights and data config, ``{"MODEL.TAG": {"hf_hub_id": "ORG/NAME", "num_classes": 100, "mean": [...], ...}}`` (any
field of timm's ``PretrainedCfg``; unset fields come from the model's own cfg). It ships empty until weights are
published, so no tag points at a repository that does not exist. ``TIMM_SL_PRETRAINED`` may name further files of the
same format (``os.pathsep``-separated, read after the shipped one, so their entries win): private or not yet
published weights, and the tests' temporary tags. ``timm-sl release`` writes the entries of the runs it publishes.
"""
import dataclasses
import difflib
import json
import math
import os
from pathlib import Path
from typing import Any, Dict, Iterable, List

from timm.data import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD
from timm.models import PretrainedCfg

__all__ = ['CIFAR100_MEAN', 'CIFAR100_STD', 'TINY_IMAGENET_MEAN', 'TINY_IMAGENET_STD', 'PAPER', 'sl_cfg',
           'small_data_cfg', 'PRETRAINED_FILE', 'PRETRAINED_ENV', 'pretrained_files', 'read_pretrained_tags',
           'with_pretrained_tags', 'check_tag_models']

PRETRAINED_FILE = Path(__file__).with_name('pretrained.json')
PRETRAINED_ENV = 'TIMM_SL_PRETRAINED'

# Per-channel statistics of the training splits (the values the reference training code normalises with).
CIFAR100_MEAN = (0.5071, 0.4865, 0.4409)
CIFAR100_STD = (0.2673, 0.2564, 0.2762)
TINY_IMAGENET_MEAN = (0.4802, 0.4481, 0.3975)
TINY_IMAGENET_STD = (0.2770, 0.2691, 0.2821)

PAPER = dict(paper_ids='arXiv:2112.13492', paper_name='Vision Transformer for Small-Size Datasets')


def sl_cfg(url: str = '', **kwargs: Any) -> Dict[str, Any]:
    """ImageNet-style cfg for the 224 px ``sl_`` models (DeiT evaluation settings)."""
    return {
        'url': url, 'num_classes': 1000, 'input_size': (3, 224, 224), 'pool_size': None,
        'crop_pct': .875, 'interpolation': 'bicubic', 'fixed_input_size': True,
        'mean': IMAGENET_DEFAULT_MEAN, 'std': IMAGENET_DEFAULT_STD,
        'first_conv': 'patch_embed.proj', 'classifier': 'head', 'license': 'apache-2.0',
        **PAPER, **kwargs,
    }


def small_data_cfg(img_size: int, **kwargs: Any) -> Dict[str, Any]:
    """cfg of the paper's small-dataset configurations.

    32 px: CIFAR-100 (100 classes, CIFAR-100 statistics; also used for CIFAR-10 / SVHN with ``num_classes``).
    64 px: Tiny-ImageNet (200 classes). No centre crop at evaluation (``crop_pct=1``), as in the reference code.
    """
    if img_size == 32:
        data = dict(num_classes=100, mean=CIFAR100_MEAN, std=CIFAR100_STD)
    elif img_size == 64:
        data = dict(num_classes=200, mean=TINY_IMAGENET_MEAN, std=TINY_IMAGENET_STD)
    else:
        raise ValueError(f'img_size={img_size} has no small-data cfg; allowed: 32, 64.')
    return sl_cfg(input_size=(3, img_size, img_size), crop_pct=1.0, **{**data, **kwargs})


def pretrained_files() -> List[Path]:
    """The tag files read: the shipped ``pretrained.json``, then those named by ``TIMM_SL_PRETRAINED``."""
    extra = [Path(p) for p in os.environ.get(PRETRAINED_ENV, '').split(os.pathsep) if p]
    return [PRETRAINED_FILE, *extra]


def _is_int(v: Any, low: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= low


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# the data-config fields a model and train.py compute with: a value of another type fails late, far from this file
_FIELD_CHECKS = {
    'hf_hub_id': (lambda v: isinstance(v, str) and bool(v), 'ORG/NAME of its Hub repository'),
    'num_classes': (lambda v: _is_int(v, 0), 'an int >= 0'),
    'input_size': (lambda v: isinstance(v, list) and len(v) == 3 and all(_is_int(n, 1) for n in v),
                   'a list [C, H, W] of ints >= 1'),
    'mean': (lambda v: isinstance(v, list) and bool(v) and all(_is_number(n) for n in v), 'a list of numbers'),
    'std': (lambda v: isinstance(v, list) and bool(v) and all(_is_number(n) and n > 0 for n in v),
            'a list of numbers > 0'),
    'crop_pct': (lambda v: _is_number(v) and v > 0, 'a number > 0'),
    'interpolation': (lambda v: isinstance(v, str), 'a string such as "bicubic"'),
    'label_names': (lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v), 'a list of strings'),
}


def _check_entry(path: Path, tag: str, entry: Any) -> Dict[str, Any]:
    allowed = {f.name for f in dataclasses.fields(PretrainedCfg)}
    if '.' not in tag or not tag.split('.', 1)[1]:
        raise ValueError(f'{path}: key {tag!r} is not MODEL.TAG (e.g. sl_vit_32.cifar100)')
    if not isinstance(entry, dict) or not entry.get('hf_hub_id'):
        raise ValueError(f'{path}: {tag} needs an object with "hf_hub_id" (ORG/NAME of its Hub repository)')
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise ValueError(f'{path}: {tag} has unknown field(s) {", ".join(unknown)}; allowed: PretrainedCfg fields '
                         f'such as hf_hub_id, num_classes, mean, std, input_size, interpolation, crop_pct, label_names')
    for name, (ok, allowed_value) in _FIELD_CHECKS.items():
        if name in entry and not ok(entry[name]):
            raise ValueError(f'{path}: {tag} has {name}={json.dumps(entry[name])}; allowed: {allowed_value}')
    return {k: tuple(v) if isinstance(v, list) and k != 'label_names' else v for k, v in entry.items()}


def _read_tag_file(path: Path) -> Dict[str, Dict[str, Any]]:
    if path.is_dir():
        raise IsADirectoryError(f'pretrained tags file {path} (from {PRETRAINED_ENV}) is a folder; allowed: a '
                                f'JSON file')
    if not path.is_file():
        raise FileNotFoundError(f'pretrained tags file {path} (from {PRETRAINED_ENV}) does not exist')
    try:
        data = json.loads(path.read_text(encoding='utf-8'))
    except UnicodeDecodeError as e:
        raise ValueError(f'{path} is not UTF-8 text ({e.reason} at byte {e.start}); allowed: a JSON file') from e
    except json.JSONDecodeError as e:
        raise ValueError(f'{path} is not valid JSON: {e}') from e
    if not isinstance(data, dict):
        raise ValueError(f'{path} must hold a JSON object of MODEL.TAG -> cfg')
    return {tag: _check_entry(path, tag, entry) for tag, entry in data.items()}


def read_pretrained_tags() -> Dict[str, Dict[str, Any]]:
    """``{'MODEL.TAG': cfg fields}`` from every tag file (later files win).

    Raises:
        FileNotFoundError: a file named by ``TIMM_SL_PRETRAINED`` does not exist (``IsADirectoryError``: is a folder).
        ValueError: a file is not a UTF-8 JSON object of ``MODEL.TAG`` -> ``{"hf_hub_id": ..., ...}`` with values
            of the types timm's data config takes; names file and tag.
    """
    tags: Dict[str, Dict[str, Any]] = {}
    for path in pretrained_files():
        tags.update(_read_tag_file(path))
    return tags


def check_tag_models(models: Iterable[str]) -> None:
    """Refuse a tag of a model not in ``models`` (the registered ``sl_`` models): it would be ignored, silently.

    Raises:
        ValueError: names the file, the tag and the allowed models.
    """
    models = sorted(models)
    for path in pretrained_files():
        for tag in _read_tag_file(path):
            model = tag.split('.', 1)[0]
            if model not in models:
                close = difflib.get_close_matches(model, models, n=1)
                hint = f'did you mean {close[0]}? ' if close else ''
                raise ValueError(f'{path}: {tag} names no registered sl_ model ({model}); {hint}allowed: a model of '
                                 f'`timm-sl list` ({models[0]}, ..., {models[-1]})')


def with_pretrained_tags(cfgs: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """``cfgs`` (a family's ``generate_default_cfgs`` input) plus one ``MODEL.TAG`` cfg per tag-file entry of a model
    in it: the model's cfg with the entry's fields on top. timm then makes a tag with weights the model's default."""
    out = dict(cfgs)
    for tag, entry in read_pretrained_tags().items():
        model = tag.split('.', 1)[0]
        if model in cfgs:
            out[tag] = {**cfgs[model], **entry}
    return out

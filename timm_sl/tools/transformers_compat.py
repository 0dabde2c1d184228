"""A ``config.json`` that both timm and Hugging Face transformers load.

timm (1.0.31) ``save_for_hf`` records the class count twice: at the root (``num_classes``, which timm's hub loading
copies into the pretrained cfg and uses as the default) and inside ``model_args`` (its reconstruction arguments).
transformers' ``TimmWrapperForImageClassification`` builds the model as
``timm.create_model(architecture, num_classes=config.num_labels, **model_args)`` (``TimmWrapperModel`` with
``num_classes=0``), so a ``num_classes`` in ``model_args`` is the same keyword twice and loading fails with
"got multiple values for keyword argument 'num_classes'". Without it, both libraries read the class count from the
root, and transformers' ``num_labels=`` (fine-tuning to a new class count) works too.

A ``slify`` model records its base's pretrained cfg, so timm writes the base's name as ``architecture`` next to
``model_args['base']``: building that name with those arguments fails in both libraries. The entry that made the
model is ``slify``.

Standard library only: exports call it after ``save_for_hf``, users call it on a folder timm wrote.
"""
import json
from pathlib import Path
from typing import Any, Dict, Union

from .errors import write_atomically
from .files import read_text

__all__ = ['transformers_compatible_config', 'make_transformers_compatible']

SLIFY = 'slify'


def transformers_compatible_config(config: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of a timm hub ``config.json`` dict that timm's ``local-dir:`` / ``hf-hub:`` loading and transformers'
    ``AutoModelForImageClassification`` / ``AutoImageProcessor`` / ``pipeline`` all build the same model from.

    Only two things change (idempotent): ``model_args['num_classes']`` is dropped when the root ``num_classes`` agrees
    with it, and a ``slify`` model's ``architecture`` (its base's name) becomes ``slify``.

    Raises:
        ValueError: not a timm hub config (no ``architecture`` / ``pretrained_cfg``), or ``model_args`` and the root
            disagree on the class count.
    """
    if not isinstance(config, dict) or 'architecture' not in config or 'pretrained_cfg' not in config:
        raise ValueError('not a timm hub config: expected a dict with "architecture" and "pretrained_cfg" (as timm\'s '
                         'save_for_hf writes)')
    config = dict(config)
    model_args = dict(config.get('model_args') or {})
    if 'num_classes' in model_args:
        classes = model_args.pop('num_classes')
        root = config.setdefault('num_classes', classes)
        if root != classes:
            raise ValueError(f'config.json says num_classes={root} but model_args has num_classes={classes}; '
                             f'the exported weights have one class count')
    base = model_args.get('base')
    if isinstance(base, str) and config['architecture'] == base.split('.')[0]:
        config['architecture'] = SLIFY
    if model_args:
        config['model_args'] = model_args
    else:
        config.pop('model_args', None)
    return config


def _plain_utf_8(path: Path) -> bool:
    data = path.read_bytes()
    try:
        data.decode('utf-8')
    except UnicodeDecodeError:
        return False
    return not data.startswith(b'\xef\xbb\xbf')


def make_transformers_compatible(folder: Union[str, Path]) -> Path:
    """Rewrite ``folder/config.json`` (written by timm's ``save_for_hf``) with
    :func:`transformers_compatible_config`; returns the config file.

    Raises:
        FileNotFoundError: the folder has no ``config.json``.
        ValueError: the file is not JSON, or not a timm hub config.
    """
    path = Path(folder) / 'config.json'
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; give a folder written by timm's save_for_hf or "
                                "timm-sl export")
    try:
        config = json.loads(read_text(path, "a timm hub config (timm's save_for_hf)"))
    except json.JSONDecodeError as e:
        raise ValueError(f'{path} is not valid JSON ({e})') from e
    try:
        fixed = transformers_compatible_config(config)
    except ValueError as e:
        raise ValueError(f'{path}: {e}') from e
    if fixed != config or not _plain_utf_8(path):  # timm and transformers read it as UTF-8 without a mark
        write_atomically(path, lambda file: file.write_text(json.dumps(fixed, indent=2), encoding='utf-8'))
    return path

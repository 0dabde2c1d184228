"""Export timm ``train.py`` checkpoints to Hugging Face Hub folders, and push them.

An exported folder is exactly what timm's own hub loading reads: ``model.safetensors`` + ``config.json`` (written by
timm's ``save_for_hf``: architecture, model_args, pretrained_cfg) + a ``README.md`` model card. It loads with
``timm.create_model('local-dir:DIR', pretrained=True)`` and, once pushed, ``'hf-hub:ORG/NAME'``.

Checkpoints are read with ``torch.load(weights_only=True)`` (train.py's ``args`` Namespace is allowed explicitly);
nothing is unpickled beyond tensors and plain containers.
"""
import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch

import timm
from timm.models import save_for_hf

from .models._filters import warm_start  # noqa: F401  (documented here; it lives with the checkpoint mapping)
from .profile import count_macs, count_params
from .train_args import format_recipe, read_args_yaml, recipe_args, summarize
from .transformers_compat import make_transformers_compatible

__all__ = ['load_training_checkpoint', 'model_from_checkpoint', 'export_checkpoint', 'read_summary', 'read_label_names',
           'trained_as', 'training_data_config', 'run_train_args', 'push_folder', 'CITATION']

# train.py's CheckpointSaver keys, most preferred first: EMA weights when the run kept them
STATE_KEYS = ('state_dict_ema', 'model_ema', 'state_dict', 'model')

CITATION = """@article{lee2021vision,
  title={Vision Transformer for Small-Size Datasets},
  author={Lee, Seung Hoon and Lee, Seunghyun and Song, Byung Cheol},
  journal={arXiv preprint arXiv:2112.13492},
  year={2021}
}"""


def load_training_checkpoint(path: Union[str, Path]) -> Tuple[Dict[str, torch.Tensor], str, Dict[str, Any]]:
    """Read a train.py checkpoint (plain state dict, ``state_dict`` or EMA keys) without unpickling code.

    Returns:
        ``(state_dict, source_key, meta)``: the weights (EMA when present, ``module.`` prefixes stripped), the key they
        came from ('plain' for a bare state dict) and the checkpoint's epoch / metric / args when present.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not a readable torch checkpoint or holds no state dict; the message names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'checkpoint {path} does not exist')
    try:
        with torch.serialization.safe_globals([argparse.Namespace]):
            checkpoint = torch.load(path, map_location='cpu', weights_only=True)
    except Exception as e:
        raise ValueError(f'{path} is not a readable torch checkpoint (weights-only load failed: {e})') from e
    source = 'plain'
    state = checkpoint
    if isinstance(checkpoint, dict):
        for key in STATE_KEYS:
            if isinstance(checkpoint.get(key), dict):
                state, source = checkpoint[key], key
                break
    if not isinstance(state, dict) or not state or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f'{path} holds no state dict (looked for {", ".join(STATE_KEYS)} or bare tensors)')
    state = {k[len('module.'):] if k.startswith('module.') else k: v for k, v in state.items()}
    meta: Dict[str, Any] = {}
    if isinstance(checkpoint, dict):
        for key in ('epoch', 'metric', 'arch'):
            if key in checkpoint:
                meta[key] = checkpoint[key]
        if isinstance(checkpoint.get('args'), argparse.Namespace):
            meta['args'] = vars(checkpoint['args'])
    return state, source, meta


def read_summary(path: Union[str, Path]) -> Dict[str, Any]:
    """Best epoch of a train.py ``summary.csv`` (by ``eval_top1``), with the number of epochs run."""
    return summarize(path)


def read_label_names(path: Union[str, Path]) -> List[str]:
    """Class names from a file: a JSON list, or one name per line (blank lines ignored).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a JSON value that is not a list of strings, or no names at all.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'label names file {path} does not exist')
    text = path.read_text()
    if text.lstrip().startswith(('[', '{', '"')):
        try:
            names = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f'{path} is not valid JSON ({e}); give a JSON list or one name per line') from e
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f'{path} holds JSON that is not a list of strings; give a JSON list or one name per line')
    else:
        names = [line.strip() for line in text.splitlines() if line.strip()]
    if not names:
        raise ValueError(f'{path} holds no label names')
    return names


def _classifier_classes(model_name: str, state: Dict[str, torch.Tensor]) -> Optional[int]:
    classifier = timm.get_pretrained_cfg_value(model_name, 'classifier') or 'head'
    weight = state.get(f'{classifier}.weight')
    return None if weight is None else weight.shape[0]


def _named(model_name: str, kwargs: Dict[str, Any]) -> str:
    return f'{model_name} {kwargs}' if kwargs else model_name


def trained_as(meta: Dict[str, Any]) -> str:
    """What a train.py checkpoint says it was trained as: model name, ``--model-kwargs`` and class count."""
    args = meta.get('args') or {}
    name = meta.get('arch') or args.get('model')
    if not name:
        return 'an unknown model (no arch / args in the checkpoint)'
    kwargs = dict(args.get('model_kwargs') or {})
    if args.get('num_classes'):
        kwargs['num_classes'] = args['num_classes']
    return _named(name, kwargs)


def _state_mismatch(expected: Dict[str, torch.Tensor], state: Dict[str, torch.Tensor]) -> str:
    """One line naming missing / unexpected keys and shape mismatches ('' when ``state`` fits)."""
    def first(keys: List[str]) -> str:
        return ', '.join(keys[:3]) + (', ...' if len(keys) > 3 else '')

    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    shapes = [f'{k} {tuple(state[k].shape)} vs {tuple(v.shape)}' for k, v in expected.items()
              if k in state and state[k].shape != v.shape]
    parts = []
    if missing:
        parts.append(f'{len(missing)} missing key(s) ({first(missing)})')
    if unexpected:
        parts.append(f'{len(unexpected)} unexpected key(s) ({first(unexpected)})')
    if shapes:
        parts.append(f'{len(shapes)} shape mismatch(es), checkpoint vs model ({first(shapes)})')
    return '; '.join(parts)


def training_data_config(model: torch.nn.Module, train_args: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The data config the run trained with, resolved as train.py does (``resolve_data_config`` over its arguments,
    the model's pretrained cfg filling what the arguments leave unset)."""
    from timm.data import resolve_data_config
    return resolve_data_config(dict(train_args or {}), model=model)


def _card_recipe(checkpoint: Path, meta: Dict[str, Any], defaults: Optional[Dict[str, Any]]) -> str:
    args = run_train_args(checkpoint, meta)
    return format_recipe(recipe_args(args, defaults)) if args else ''


def run_train_args(checkpoint: Union[str, Path], meta: Dict[str, Any]) -> Dict[str, Any]:
    """The train.py arguments of a checkpoint's run: ``args.yaml`` beside it, else the checkpoint's ``args``."""
    args_yaml = Path(checkpoint).parent / 'args.yaml'
    if args_yaml.is_file():
        return read_args_yaml(args_yaml)
    return dict(meta.get('args') or {})


INSTALL_NOTE = ('timm_sl is not published on PyPI: install it from its git repository '
                '(`pip install git+<repository URL>`) or from a checkout (`pip install .`). Installing it registers '
                "the `sl_` models with timm, so `timm.create_model` finds them without importing timm_sl.")


def _model_card(name: str, model: torch.nn.Module, model_kwargs: Dict[str, Any], source: str,
                summary: Optional[Dict[str, Any]], dataset: Optional[str], recipe: str,
                repo_id: str = 'ORG/NAME', extra: Sequence[str] = ()) -> str:
    cfg = model.pretrained_cfg
    variant = ', '.join(f'{k}={v}' for k, v in model_kwargs.items()) or 'SPT + LSA'
    lines = [
        '---', 'library_name: timm', 'license: apache-2.0', 'tags:', '- image-classification', '- timm', '- timm_sl',
        *(['datasets:', f'- {dataset}'] if dataset else []), '---', '',
        f'# {name}' + (f' ({dataset})' if dataset else ''), '',
        f'A `{name}` ({variant}) image classifier from *Vision Transformer for Small-Size Datasets* (Lee, Lee &'
        " Song, 2021), trained with timm's train.py and exported with `timm-sl export`.", '',
        '## Model details', '',
        f'- Parameters: {count_params(model) / 1e6:.2f} M',
        f'- MACs: {count_macs(model) / 1e6:.1f} M at {"x".join(map(str, cfg["input_size"]))}',
        f'- Classes: {model.num_classes}',
        f'- Preprocessing (as trained): mean {tuple(cfg["mean"])}, std {tuple(cfg["std"])}, '
        f'{cfg["interpolation"]} interpolation, crop_pct {cfg.get("crop_pct")}',
        f'- Weights: `{source}` of the training checkpoint' + (' (EMA)' if 'ema' in source else ''), '',
    ]
    if summary:
        lines += ['## Results', '', '| metric | value |', '|---|---|',
                  f'| best top-1 (%) | {summary["best_top1"]:.2f} |']
        if summary.get('best_top5') is not None:
            lines.append(f'| top-5 at that epoch (%) | {summary["best_top5"]:.2f} |')
        lines += [f'| best epoch | {summary["best_epoch"]} |', f'| epochs run | {summary["epochs"]} |', '']
    lines += list(extra)
    if recipe:
        lines += ["## Training recipe (train.py arguments that differ from train.py's defaults)", '',
                  '```yaml', recipe.rstrip(), '```', '']
    lines += [
        '## Usage', '', INSTALL_NOTE, '', '```python', 'import timm',
        f"model = timm.create_model('hf-hub:{repo_id}', pretrained=True).eval()",
        'config = timm.data.resolve_data_config({}, model=model)  # the training mean / std / size',
        'transform = timm.data.create_transform(**config)', '```', '',
        '## Intended use', '',
        'Image classification on data like the training set, and a starting point for fine-tuning on small datasets.'
        ' Not evaluated for robustness, fairness or any safety-critical use.', '',
        '## Citation', '', '```bibtex', CITATION, '```', '',
    ]
    return '\n'.join(lines)


def model_from_checkpoint(
        checkpoint: Union[str, Path],
        model_name: str,
        model_kwargs: Optional[Dict[str, Any]] = None,
) -> Tuple[torch.nn.Module, Dict[str, Any], str, Dict[str, Any]]:
    """Build ``model_name`` and load a train.py checkpoint into it strictly (``num_classes`` read from the classifier
    unless given). Returns ``(model, model_kwargs used, state dict key used, checkpoint metadata)``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a weights-only readable checkpoint, or it does not fit ``model_name`` with ``model_kwargs``:
            one line saying what the checkpoint was trained as and which keys / shapes differ.
    """
    state, source, meta = load_training_checkpoint(checkpoint)
    model_kwargs = dict(model_kwargs or {})
    if 'num_classes' not in model_kwargs:
        classes = _classifier_classes(model_name, state)
        if classes is not None:
            model_kwargs['num_classes'] = classes
    wanted = _named(model_name, model_kwargs)
    try:
        model = timm.create_model(model_name, **model_kwargs)
    except (RuntimeError, TypeError, ValueError) as e:
        detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f'{checkpoint} cannot build {wanted} (it was trained as {trained_as(meta)}): {detail}') from e
    mismatch = _state_mismatch(model.state_dict(), state)
    if mismatch:
        raise ValueError(f'{checkpoint} does not fit {wanted} (it was trained as {trained_as(meta)}): {mismatch}')
    model.load_state_dict(state, strict=True)
    return model, model_kwargs, source, meta


def export_checkpoint(
        checkpoint: Union[str, Path],
        model_name: str,
        out_dir: Union[str, Path],
        model_kwargs: Optional[Dict[str, Any]] = None,
        summary: Optional[Union[str, Path]] = None,
        dataset: Optional[str] = None,
        label_names: Optional[Union[List[str], str, Path]] = None,
        train_defaults: Optional[Dict[str, Any]] = None,
        repo_id: str = 'ORG/NAME',
        card_sections: Sequence[str] = (),
) -> Tuple[Path, str]:
    """Write a Hub-ready folder for a train.py checkpoint; returns ``(folder, state dict key used)``.

    The exported ``pretrained_cfg`` carries the data config the run trained with (mean, std, input size,
    interpolation, crop) resolved from its ``args.yaml`` (or the checkpoint's ``args``) as train.py resolved it, and
    ``label_names`` (a list, or a file: JSON list or one per line) when given. The card's recipe lists the train.py
    arguments that differ from ``train_defaults`` (train.py's defaults; without them, the usual recipe keys).

    Raises:
        FileNotFoundError: no such checkpoint / label names file.
        ValueError: the checkpoint does not fit ``model_name`` with ``model_kwargs`` (see
            :func:`model_from_checkpoint`), or the label names do not number the model's classes.
    """
    checkpoint = Path(checkpoint)
    if isinstance(label_names, (str, Path)):
        label_names = read_label_names(label_names)
    model, model_kwargs, source, meta = model_from_checkpoint(checkpoint, model_name, model_kwargs)
    if label_names is not None and len(label_names) != model.num_classes:
        raise ValueError(f'{len(label_names)} label names given but {checkpoint} has {model.num_classes} classes; '
                         f'give exactly one name per class, in class-index order')
    model.pretrained_cfg.update(training_data_config(model, run_train_args(checkpoint, meta)))
    out_dir = Path(out_dir)
    model_config = {'label_names': list(label_names)} if label_names else {}
    save_for_hf(model, out_dir, model_config=model_config, model_args=model_kwargs, safe_serialization=True)
    make_transformers_compatible(out_dir)  # also loads in transformers' timm wrapper
    card_kwargs = {k: v for k, v in model_kwargs.items() if k != 'num_classes'}
    summary_info = read_summary(summary) if summary else None
    card = _model_card(model_name, model, card_kwargs, source, summary_info, dataset,
                       _card_recipe(checkpoint, meta, train_defaults), repo_id=repo_id, extra=card_sections)
    (out_dir / 'README.md').write_text(card)
    return out_dir, source


def push_folder(folder: Union[str, Path], repo_id: str, private: bool = False, revision: Optional[str] = None,
                commit_message: str = 'Upload timm_sl model') -> str:
    """Upload an exported folder to the Hub; returns the commit URL.

    Raises:
        RuntimeError: not logged in, offline, or the Hub refused the upload — with what to do about it.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.utils import HfHubHTTPError
    folder = Path(folder)
    missing = [f for f in ('config.json', 'model.safetensors') if not (folder / f).is_file()]
    if missing:
        raise FileNotFoundError(f'{folder} is not an exported model folder: missing {", ".join(missing)}')
    api = HfApi()
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        if revision:
            api.create_branch(repo_id, branch=revision, exist_ok=True)
        info = api.upload_folder(repo_id=repo_id, folder_path=str(folder), revision=revision,
                                 commit_message=commit_message)
    except HfHubHTTPError as e:
        status = getattr(getattr(e, 'response', None), 'status_code', None)
        if status in (401, 403):
            raise RuntimeError(f'the Hub refused {repo_id} ({status}): log in with `hf auth login` or set HF_TOKEN '
                               f'to a token with write access') from e
        raise RuntimeError(f'upload of {folder} to {repo_id} failed: {e}') from e
    except Exception as e:  # offline mode, DNS, connection refused, ...
        raise RuntimeError(f'could not reach the Hugging Face Hub to push {repo_id} ({type(e).__name__}: {e}); '
                           f'check the network (and that HF_HUB_OFFLINE is not set)') from e
    return str(getattr(info, 'commit_url', info))


"""Export timm ``train.py`` checkpoints to Hugging Face Hub folders, and push them.

An exported folder is exactly what timm's own hub loading reads: ``model.safetensors`` + ``config.json`` (written by
timm's ``save_for_hf``: architecture, model_args, pretrained_cfg) + a ``README.md`` model card. It loads with
``timm.create_model('local-dir:DIR', pretrained=True)`` and, once pushed, ``'hf-hub:ORG/NAME'``.

Checkpoints are read with ``torch.load(weights_only=True)`` (train.py's ``args`` Namespace is allowed explicitly);
nothing is unpickled beyond tensors and plain containers.
"""
import argparse
import csv
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import torch

import timm
from timm.models import save_for_hf

from .models._filters import warm_start  # noqa: F401  (documented here; it lives with the checkpoint mapping)
from .profile import count_macs, count_params

__all__ = ['load_training_checkpoint', 'model_from_checkpoint', 'export_checkpoint', 'read_summary', 'push_folder',
           'CITATION']

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
    rows = list(csv.DictReader(Path(path).open()))
    if not rows or 'eval_top1' not in rows[0]:
        raise ValueError(f'{path} is not a train.py summary.csv (no eval_top1 column)')
    best = max(rows, key=lambda r: float(r['eval_top1']))
    return {
        'best_top1': float(best['eval_top1']), 'best_top5': float(best['eval_top5']) if best.get('eval_top5') else None,
        'best_epoch': int(float(best['epoch'])), 'epochs': len(rows),
    }


def _classifier_classes(model_name: str, state: Dict[str, torch.Tensor]) -> Optional[int]:
    classifier = timm.get_pretrained_cfg_value(model_name, 'classifier') or 'head'
    weight = state.get(f'{classifier}.weight')
    return None if weight is None else weight.shape[0]


def _recipe(checkpoint: Path, meta: Dict[str, Any]) -> str:
    args_yaml = checkpoint.parent / 'args.yaml'
    if args_yaml.is_file():
        return args_yaml.read_text()
    if 'args' in meta:
        keep = ('model', 'model_kwargs', 'epochs', 'batch_size', 'opt', 'lr', 'weight_decay', 'sched', 'warmup_epochs',
                'min_lr', 'smoothing', 'drop_path', 'aa', 'reprob', 'mixup', 'cutmix', 'aug_repeats', 'model_ema')
        return '\n'.join(f'{k}: {meta["args"][k]}' for k in keep if k in meta['args']) + '\n'
    return ''


def _model_card(name: str, model: torch.nn.Module, model_kwargs: Dict[str, Any], source: str,
                summary: Optional[Dict[str, Any]], dataset: Optional[str], recipe: str) -> str:
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
        f'- Weights: `{source}` of the training checkpoint' + (' (EMA)' if 'ema' in source else ''), '',
    ]
    if summary:
        lines += ['## Results', '', '| metric | value |', '|---|---|',
                  f'| best top-1 (%) | {summary["best_top1"]:.2f} |']
        if summary.get('best_top5') is not None:
            lines.append(f'| top-5 at that epoch (%) | {summary["best_top5"]:.2f} |')
        lines += [f'| best epoch | {summary["best_epoch"]} |', f'| epochs run | {summary["epochs"]} |', '']
    if recipe:
        lines += ['## Training recipe', '', '```yaml', recipe.rstrip(), '```', '']
    lines += [
        '## Usage', '', '```python', 'import timm  # with timm-sl installed: pip install timm-sl',
        "model = timm.create_model('hf-hub:ORG/NAME', pretrained=True).eval()",
        'config = timm.data.resolve_data_config({}, model=model)',
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
        ValueError: not a weights-only readable checkpoint, or it does not fit ``model_name`` with ``model_kwargs``
            (names the missing/unexpected keys or the shape mismatch).
    """
    state, source, meta = load_training_checkpoint(checkpoint)
    model_kwargs = dict(model_kwargs or {})
    if 'num_classes' not in model_kwargs:
        classes = _classifier_classes(model_name, state)
        if classes is not None:
            model_kwargs['num_classes'] = classes
    model = timm.create_model(model_name, **model_kwargs)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise ValueError(f'{checkpoint} does not fit {model_name} {model_kwargs}: {e}') from e
    return model, model_kwargs, source, meta


def export_checkpoint(
        checkpoint: Union[str, Path],
        model_name: str,
        out_dir: Union[str, Path],
        model_kwargs: Optional[Dict[str, Any]] = None,
        summary: Optional[Union[str, Path]] = None,
        dataset: Optional[str] = None,
        label_names: Optional[List[str]] = None,
) -> Tuple[Path, str]:
    """Write a Hub-ready folder for a train.py checkpoint; returns ``(folder, state dict key used)``.

    Raises:
        ValueError: the checkpoint does not fit ``model_name`` with ``model_kwargs`` (see
            :func:`model_from_checkpoint`).
    """
    checkpoint = Path(checkpoint)
    model, model_kwargs, source, meta = model_from_checkpoint(checkpoint, model_name, model_kwargs)
    out_dir = Path(out_dir)
    model_config = {'label_names': label_names} if label_names else {}
    save_for_hf(model, out_dir, model_config=model_config, model_args=model_kwargs, safe_serialization=True)
    card_kwargs = {k: v for k, v in model_kwargs.items() if k != 'num_classes'}
    summary_info = read_summary(summary) if summary else None
    (out_dir / 'README.md').write_text(
        _model_card(model_name, model, card_kwargs, source, summary_info, dataset, _recipe(checkpoint, meta)))
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


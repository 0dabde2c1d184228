"""Refusals of a model built from a saved config.json name that file.

``timm.create_model('local-dir:X')`` / ``'hf-hub:ORG/NAME'`` passes the folder's ``model_args`` to the entry point as
kwargs (and again as ``pretrained_model_args``) and marks the pretrained cfg with where it came from; timm's loader
never names the file, so a hand-edited or older config.json would be refused by a line that names only the kwarg."""
import functools
import os
import re
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, Optional

from torch import nn

__all__ = ['names_saved_config', 'saved_config_named', 'saved_config_origin']


def saved_config_origin(kwargs: Dict[str, Any]) -> Optional[str]:
    """The config.json timm read ``kwargs`` from (``local-dir:`` / ``hf-hub:``: timm passes its ``model_args`` as
    ``pretrained_model_args`` and marks the pretrained cfg's source), else ``None``."""
    cfg = kwargs.get('pretrained_cfg')
    cfg = cfg.to_dict() if hasattr(cfg, 'to_dict') else cfg
    if not kwargs.get('pretrained_model_args') or not isinstance(cfg, dict):
        return None
    if cfg.get('source') == 'local-dir' and isinstance(cfg.get('file'), str):
        return os.path.join(cfg['file'], 'config.json')
    if cfg.get('source') == 'hf-hub' and isinstance(cfg.get('hf_hub_id'), str):
        return f'config.json of hf-hub:{cfg["hf_hub_id"]}'
    return None


@contextmanager
def saved_config_named(kwargs: Dict[str, Any]) -> Iterator[None]:
    """Within: a ``ValueError`` / ``TypeError`` / ``RuntimeError`` (a subclass too: ``SlifyError``) naming a kwarg that
    came from a saved config's ``model_args`` (not given over it), or its text value (``base``'s model), is raised again
    with that config.json first, which timm's loader never names (``timm.create_model('local-dir:X')`` of a
    hand-edited or older export). A plain one is raised anew as its type; a subclass is the same object (its
    attributes kept), its message prefixed."""
    try:
        yield
    except (ValueError, TypeError, RuntimeError) as error:
        origin, message = saved_config_origin(kwargs), str(error)
        saved = kwargs.get('pretrained_model_args') or {}
        named = [k for k, v in saved.items() if isinstance(k, str) and _same(kwargs.get(k, _MISSING), v)
                 and _names(message, k, v)]
        if origin is None or not named or origin in message:
            raise
        line = f'{origin} (model_args {", ".join(named)}): {message}'
        if type(error) in (ValueError, TypeError, RuntimeError):
            raise type(error)(line) from error
        args = error.args
        error.args = (line,) + tuple(args[1:])
        if str(error) != line:  # its own __str__: left as it is
            error.args = args
        raise


def _names(message: str, key: str, value: Any) -> bool:
    """Whether a refusal's ``message`` names a saved kwarg: its key, or a text value of it (a model's name)."""
    if re.search(rf'(?<![\w.]){re.escape(key)}\b', message):
        return True
    return isinstance(value, str) and len(value) >= 3 and bool(
        re.search(rf'(?<![\w.]){re.escape(value)}(?![\w])', message))


def names_saved_config(builder: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
    """A model entry point whose refusals name the saved config.json its kwargs came from (see
    :func:`saved_config_named`)."""
    @functools.wraps(builder)
    def build(*args: Any, **kwargs: Any) -> nn.Module:
        with saved_config_named(kwargs):
            return builder(*args, **kwargs)
    return build


_MISSING = object()


def _same(given: Any, saved: Any) -> bool:
    """Whether a kwarg is the saved config's value (timm puts that very object in unless one was given over it)."""
    if given is saved:
        return True
    if type(given) is not type(saved):  # depth=True given over a saved depth=1 is the caller's own
        return False
    try:
        return bool(given == saved)
    except Exception:  # noqa: BLE001  (a tensor or other odd value: not the saved one)
        return False

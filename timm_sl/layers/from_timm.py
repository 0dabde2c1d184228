"""Helpers of the ``from_timm`` constructors: every SL layer is built from the timm module it replaces by one
classmethod, which reads the module's configuration back from its attributes and copies the state that means the
same thing in both, strictly."""
from typing import Any, Dict, Iterable

from torch import nn

__all__ = ['check_timm_source', 'copy_timm_state', 'module_dd', 'qualname']


def qualname(obj: object) -> str:
    """``module.Class`` of a class, or of an instance's class."""
    cls = obj if isinstance(obj, type) else type(obj)
    return f'{cls.__module__}.{cls.__qualname__}'


def module_dd(module: nn.Module) -> Dict[str, Any]:
    """``device`` / ``dtype`` of ``module``'s first parameter (none for a module without parameters)."""
    tensor = next(module.parameters(), None)
    return {} if tensor is None else {'device': tensor.device, 'dtype': tensor.dtype}


def check_timm_source(module: nn.Module, timm_cls: type, target: str) -> None:
    """Raise ``TypeError`` unless ``module`` is exactly ``timm_cls`` (a subclass may have options the rebuild
    would drop)."""
    if type(module) is not timm_cls:
        raise TypeError(f'{target}.from_timm takes a {qualname(timm_cls)}, not {qualname(module)}.')


def copy_timm_state(new: nn.Module, old: nn.Module, own: Iterable[str] = ('temperature',)) -> nn.Module:
    """Load ``old``'s state into ``new``: every key must line up except ``new``'s ``own`` ones (LSA's
    ``temperature`` keeps its init). Also keeps the instance's attention kernel choice (``fused_attn``)."""
    result = new.load_state_dict(old.state_dict(), strict=False)
    missing = [k for k in result.missing_keys if k not in set(own)]
    if missing or result.unexpected_keys:  # a timm class whose layout changed: better loud than half-loaded
        raise RuntimeError(f'{qualname(old)} -> {type(new).__name__}: weights do not '
                           f'line up (missing {missing}, unexpected {result.unexpected_keys})')
    if hasattr(old, 'fused_attn') and hasattr(new, 'fused_attn'):
        new.fused_attn = old.fused_attn  # e.g. set off on the instance for attention maps
    return new

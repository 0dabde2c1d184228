"""Constant tensors an attention forward needs every call (a diagonal bias, a window mask's LSA pattern), built once
and shared between calls.

On a GPU a small model's forward waits on kernel launches more than on arithmetic; building such a constant costs
several small kernels per attention call, and nothing at all once it is shared.
"""
import threading
import weakref
from collections import OrderedDict
from typing import Callable, Hashable, Optional, Tuple

import torch

__all__ = ['SharedTensorCache', 'reuse_allowed']


@torch.jit.unused
def reuse_allowed(device: torch.device) -> bool:
    """Whether a forward on ``device`` may hand out a tensor built by an earlier call: not while a graph is being
    captured (tracing, ``torch.compile``, ``torch.export``, a CUDA graph), which should record the ops that build it,
    nor under a fake-tensor mode (shape / memory estimation), whose tensors must neither be kept nor mixed with real
    ones."""
    if torch.jit.is_tracing() or torch.compiler.is_compiling() or _fake_mode_active():
        return False
    return not (device.type == 'cuda' and torch.cuda.is_current_stream_capturing())


def _fake_mode_active() -> bool:
    # torch offers no public query for an active FakeTensorMode; this is the dispatcher's own slot for it (~0.1 us)
    return torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None


class SharedTensorCache:
    """A few tensors derived from constants, built once and handed to every call that asks for the same key.

    An entry is rebuilt when its tensor was modified in place (its version counter moved) and, for an entry derived
    from a ``source`` tensor, when that tensor is another object or was modified; an entry of a source goes when
    the source is freed. Least recently used entries go first beyond ``max_entries`` entries or ``max_bytes`` bytes
    (the newest entry always stays). Entries are built outside
    inference mode, so one first made under ``torch.inference_mode`` still serves a training step. Thread-safe
    (``nn.DataParallel`` runs its replicas in threads).
    """

    def __init__(self, max_entries: int, max_bytes: int = 16 * 2 ** 20) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: 'OrderedDict[Hashable, Tuple]' = OrderedDict()
        self._lock = threading.RLock()  # re-entrant: a weak-reference callback may fire inside a locked section

    def __len__(self) -> int:
        return len(self._entries)

    def get(
            self,
            key: Hashable,
            build: Callable[[], torch.Tensor],
            device: torch.device,
            source: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """The tensor stored under ``key`` (with ``source``: under ``key`` and that tensor), else ``build()``'s.

        ``build()`` runs and nothing is kept or handed out where :func:`reuse_allowed` says no for ``device``, or
        when ``source`` is an inference tensor (it has no version counter to watch).
        """
        if not reuse_allowed(device) or (source is not None and source.is_inference()):
            return build()
        if source is not None:
            key = (key, id(source))
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and self._valid(entry, source):
                self._entries.move_to_end(key)
                return entry[0]
            with torch.inference_mode(False):  # a tensor made here still serves autograd outside inference mode
                value = build()
            if type(value) is not torch.Tensor:  # a tensor subclass (fake, functional, ...) belongs to its context
                return value
            if source is None:
                self._entries[key] = (value, value._version)
            else:  # the weak reference's callback drops the entry when the source is freed (before its id is reused)
                ref = weakref.ref(source, lambda _, k=key: self._drop(k))
                self._entries[key] = (value, value._version, ref, source._version)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries or (len(self._entries) > 1 and self.nbytes() > self.max_bytes):
                self._entries.popitem(last=False)
            return value

    def nbytes(self) -> int:
        """Bytes held by the entries' tensors."""
        return sum(entry[0].numel() * entry[0].element_size() for entry in self._entries.values())

    def _drop(self, key: Hashable) -> None:
        with self._lock:
            self._entries.pop(key, None)

    @staticmethod
    def _valid(entry: Tuple, source: Optional[torch.Tensor]) -> bool:
        value, version = entry[:2]
        if value._version != version:
            return False
        return source is None or (entry[2]() is source and entry[3] == source._version)

"""The SPT / LSA switches shared by every ``sl_`` model (the package's public kwargs interface).

Every family's model class takes these keyword arguments next to its timm backbone's own, and they survive
``timm.create_model(name, **kwargs)`` and ``train.py --model-kwargs k=v`` unchanged:

====================  ===========  ==========================================================================
kwarg                 default      meaning
====================  ===========  ==========================================================================
``spt``               ``True``     Shifted Patch Tokenization as the patch embedding
``shift_ratio``       ``0.5``      shift = ``int(patch * shift_ratio)`` px, ratio in (0, 1]
``shift_directions``  'diagonal'   'diagonal' (4), 'cardinal' (4) or 'all' (8) shifted copies
``lsa``               ``True``     Locality Self-Attention master switch (default of the two below)
``lsa_mask``          ``None``     diagonal masking ("M"); ``None`` follows ``lsa``
``lsa_learn_temp``    ``None``     learnable per-head temperature ("T"); ``None`` follows ``lsa``
``lsa_temp_ratio``    ``1.0``      softmax temperature as a multiple of sqrt(head_dim) (paper Table 1)
====================  ===========  ==========================================================================

With ``spt=False, lsa=False`` (and ``lsa_temp_ratio=1``) the model is exactly its timm baseline: the same modules,
state-dict keys and parameter count.
"""
import ast
import dataclasses
import inspect
import math
import textwrap
import typing
from dataclasses import asdict, dataclass, fields
from functools import lru_cache, partial
from typing import Any, Callable, Dict, Iterable, Optional, Set, Tuple

from .lsa import check_temp_ratio
from .spt import ShiftedPatchEmbed, check_shift_ratio, owner_name, shift_offsets

__all__ = ['SlArgs', 'SL_ARG_NAMES', 'accepted_kwargs', 'check_bool', 'check_model_kwargs', 'check_optional_bool',
           'check_options_used', 'paired_kwargs', 'unused_options', 'with_switches', 'without_unused_options']


def check_bool(name: str, value: Any) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is a bool."""
    if not isinstance(value, bool):
        raise ValueError(f'{name}={value!r} is invalid; allowed: True or False.')


def check_optional_bool(name: str, value: Any) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is a bool or None."""
    if value is not None and not isinstance(value, bool):
        raise ValueError(f'{name}={value!r} is invalid; allowed: True, False or None.')


def _config_fields(init: Callable) -> Dict[str, Any]:
    """Field name -> default of each dataclass a constructor takes as an argument (NaFlexVit's ``cfg``), whose fields
    its ``**kwargs`` fill."""
    try:
        hints = typing.get_type_hints(init)
    except Exception:  # an annotation naming what its module does not define: no config read
        return {}
    found: Dict[str, Any] = {}
    for hint in hints.values():
        for klass in typing.get_args(hint) or (hint,):  # Optional[Cfg] -> Cfg
            if isinstance(klass, type) and dataclasses.is_dataclass(klass):
                found.update({f.name: f.default for f in fields(klass)})
    return found


def _constructor_defaults(model_cls: type) -> Dict[str, Any]:
    """Keyword name -> default of ``model_cls``'s constructor and of each base its ``**kwargs`` flow to (up the MRO
    until a constructor without ``**kwargs``; those of a dataclass config it takes, which its ``**kwargs`` fill); the
    nearest class's default wins."""
    defaults: Dict[str, Any] = {}
    for klass in model_cls.__mro__:
        init = klass.__dict__.get('__init__')
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        for p in params:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != 'self':
                defaults.setdefault(p.name, p.default)
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break
        for name, default in _config_fields(init).items():
            defaults.setdefault(name, default)
    return defaults


def accepted_kwargs(model_cls: type) -> Set[str]:
    """Keyword names ``model_cls(**kwargs)`` accepts: its constructor's, those of each base its ``**kwargs`` flow to
    (up the MRO until a constructor without ``**kwargs``), and the SL switches."""
    return set(SL_ARG_NAMES) | set(_constructor_defaults(model_cls))


def check_model_kwargs(
        model_cls: type,
        kwargs: Dict[str, Any],
        also_allowed: Iterable[str] = (),
        owner: Optional[str] = None,
        complete: bool = True,
        known: Optional[Dict[str, Any]] = None,
) -> None:
    """Raise ``TypeError`` naming every kwarg ``model_cls`` does not accept, and the accepted ones (plus
    ``also_allowed``); ``ValueError`` for text given to a kwarg whose default is a bool (``--model-kwargs
    qkv_bias=maybe`` arrives as the string 'maybe', which Python takes for True). ``owner`` names the caller in the
    message (default: :func:`~timm_sl.layers.spt.owner_name` of the class: the registered name being built).
    ``complete``: ``kwargs`` and the class defaults are the whole build (an ``sl_`` model's); False for ``slify``'s
    user kwargs over a registered timm config, whose other values are not the class defaults (``vit_small``: 6 heads,
    the class 12), so checks that pair two kwargs run only where both are given, or where ``known`` (the named
    model's own values of the kwargs not given) holds the other; per-stage kwargs are checked there too (timm takes
    an int for a tuple with a bare TypeError, a shorter tuple with an IndexError, and builds a PiT whose tuples
    disagree in length, to fail at its first forward)."""
    defaults = _constructor_defaults(model_cls)
    allowed = set(SL_ARG_NAMES) | set(defaults) | set(also_allowed)
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise TypeError(f'{owner or owner_name(model_cls)} got unknown model kwargs {unknown}; allowed: '
                        f'{", ".join(sorted(allowed))}.')
    values_of = defaults if complete else dict(known or {})
    _check_counts(kwargs, defaults)
    for name, value in kwargs.items():
        if isinstance(value, str) and isinstance(defaults.get(name), bool):
            raise ValueError(f'{owner or owner_name(model_cls)}: {name}={value!r} is invalid; allowed: True or False.')
        check = _VALUE_CHECKS.get(name) or _class_value_checks(model_cls).get(name)
        if check is None or name not in defaults:
            continue
        ok, allowed = check
        if name in _PER_STAGE and 'depths' in defaults:  # Swin: one value, or one per stage
            ok, allowed = (lambda v, one=ok: one(v) or (isinstance(v, (tuple, list)) and bool(v) and all(map(one, v)))
                           ), f'{allowed}, or a tuple of them (one per stage)'
        if not ok(value):
            raise ValueError(f'{owner or owner_name(model_cls)}: {name}={value!r} is invalid; allowed: {allowed}.')
        stages = kwargs.get('depths', values_of.get('depths'))
        if name in _PER_STAGE and isinstance(value, (tuple, list)) and isinstance(stages, (tuple, list)) and len(
                value) < len(stages):  # timm's Swin reads one per stage: an IndexError in its init
            raise ValueError(f'{owner or owner_name(model_cls)}: {name}={value!r} is invalid with depths={stages!r}; '
                             f'allowed: one value, or one per stage ({len(stages)}).')
    values = values_of  # a kwarg not given: the class default for a whole build, else what is known of it
    _check_heads_divide(model_cls, kwargs, defaults, values, owner)
    _check_token_pooling(model_cls, kwargs, defaults, values, owner)
    if not complete:  # an sl_ model's family checks its stages itself, with its own wording
        _check_stages(model_cls, kwargs, defaults, values, owner)


# counts and rates every sl_ family refuses in its own words (no model name: the layer or training check's wording),
# refused here too for slify's bases and the baselines, whose timm classes take them without a word (in_chans=True: a
# 1-channel stem; a ViT's depth=True: one block; drop_path_rate=1.5 or NaN: the first training step fails) or fail
# far from the kwarg (in_chans='3', depth=-1, num_heads=3.0)
_COUNTS = {'in_chans': 1, 'depth': 0, 'depth_token_only': 0, 'num_heads': 1}


def _check_counts(kwargs: Dict[str, Any], defaults: Dict[str, Any]) -> None:
    """The channel count, an int depth and head count (where the class default is an int: not a per-stage tuple) and
    the drop-path rate of ``kwargs``, each refused in the words the ``sl_`` families use."""
    for name, low in _COUNTS.items():
        value, default = kwargs.get(name), defaults.get(name)
        if name in kwargs and _is_int(default, 0) and not _is_int(value, low):
            raise ValueError(f'{name}={value!r} is invalid; allowed: an int >= {low}.')
    rate = kwargs.get('drop_path_rate', 0.)
    if 'drop_path_rate' in defaults and not (_is_number(rate) and 0 <= rate < 1):
        raise ValueError(f'drop_path_rate={rate!r} is invalid; allowed: a number in [0, 1).')


def paired_kwargs(model_cls: type) -> Set[str]:
    """The kwargs of ``model_cls`` whose checks read another kwarg's value: the width and head count, the class
    token and pooling, and the per-stage tuples."""
    defaults = _constructor_defaults(model_cls)
    stages = {k for k, v in defaults.items() if isinstance(v, (tuple, list))}
    stages |= set(_PER_STAGE) if 'depths' in defaults else set()  # Swin: one value or one per stage
    return ({'embed_dim', 'num_heads', 'class_token', 'global_pool'} | stages) & set(defaults)


def _check_stages(model_cls: type, kwargs: Dict[str, Any], defaults: Dict[str, Any], values: Dict[str, Any],
                  owner: Optional[str]) -> None:
    """Per-stage kwargs (a tuple by the class default: Swin's ``depths`` / ``num_heads``, PiT's ``depth`` / ``heads``
    / ``base_dims``): each given one a non-empty tuple of ints, and as long as the stages (``depths``: at least,
    timm's Swin reads one per stage; ``depth``: equal, timm's PiT reads its width from the last of each). ``values``:
    what a kwarg not given is (``{}``: only given ones are checked)."""
    stage_key = next((k for k in ('depths', 'depth') if isinstance(defaults.get(k), (tuple, list))), None)
    if stage_key is None:
        return
    names = [k for k, v in defaults.items() if isinstance(v, (tuple, list)) and v and all(_is_int(x, 0) for x in v)]
    who = owner or owner_name(model_cls)
    for name in names:
        value = kwargs.get(name)
        if name in kwargs and not (isinstance(value, (tuple, list)) and value and all(_is_int(x, 0) for x in value)):
            raise ValueError(f'{who}: {name}={value!r} is invalid; allowed: a non-empty tuple of ints, one per stage.')
    stages = kwargs.get(stage_key, values.get(stage_key))
    if not isinstance(stages, (tuple, list)):
        return
    for name in names:
        value = kwargs[name] if name in kwargs else values.get(name)
        if name == stage_key or not isinstance(value, (tuple, list)) or stage_key not in kwargs and name not in kwargs:
            continue
        if len(value) < len(stages) or (stage_key == 'depth' and len(value) != len(stages)):
            given = ', '.join(f'{k}={kwargs[k] if k in kwargs else values[k]!r}' for k in (stage_key, name))
            need = 'as many' if stage_key == 'depth' else 'at least as many'
            raise ValueError(f'{who}: {given}: {len(stages)} stages, {len(value)} {name}; allowed: {need} {name} '
                             f'as stages ({len(stages)}).')


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


# kwargs of the timm backbones whose bad values timm takes without a word (num_classes=-1: no classifier; a NaN drop
# rate: the first training step fails) or refuses far from the kwarg (embed_dim=0: ZeroDivisionError in its init)
_RATE = (lambda v: _is_number(v) and 0 <= v < 1, 'a number in [0, 1)')
_VALUE_CHECKS = {
    'num_classes': (lambda v: _is_int(v, 0), 'an int >= 0 (0: no classifier)'),
    'embed_dim': (lambda v: _is_int(v, 1), 'an int >= 1'),
    'mlp_ratio': (lambda v: _is_number(v) and v > 0, 'a finite number > 0'),
    **{name: _RATE for name in ('drop_rate', 'attn_drop_rate', 'proj_drop_rate', 'pos_drop_rate', 'patch_drop_rate')},
    'init_values': (lambda v: v is None or _is_number(v), 'None or a finite number (LayerScale off / its start)'),
    'weight_init': (lambda v: v in ('', 'skip', 'reset', 'jax', 'jax_nlhb', 'moco'),
                    "'', 'skip', 'reset', 'jax', 'jax_nlhb' or 'moco'"),
}
_VALUE_CHECKS['window_size'] = (
    lambda v: v is None or _is_int(v, 1) or (isinstance(v, (tuple, list)) and bool(v) and all(
        _is_int(w, 1) or (isinstance(w, (tuple, list)) and len(w) == 2 and all(_is_int(x, 1) for x in w)) for w in v)),
    'an int >= 1, an (h, w) pair of them, or one of those per stage')
_PER_STAGE = ('mlp_ratio',)  # timm's Swin takes no tuple embed_dim (its own init fails on one)


def _one_of(values: Iterable[Any]) -> str:
    """``'a', 'b' or 'c'`` of ``values``."""
    shown = [repr(v) for v in values]
    return shown[0] if len(shown) == 1 else f'{", ".join(shown[:-1])} or {shown[-1]}'


def _asserted_global_pools(model_cls: type) -> Optional[Tuple[str, ...]]:
    """The values of ``assert global_pool in (...)`` in the constructor of ``model_cls`` or of a base its
    ``**kwargs`` flow to (timm's own list for ViT, CaiT, PiT), or None where no constructor asserts one."""
    for klass in model_cls.__mro__:
        init = klass.__dict__.get('__init__')
        if init is None or not hasattr(init, '__code__'):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            test = node.test if isinstance(node, ast.Assert) else None
            if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == 'global_pool'
                    and len(test.ops) == 1 and isinstance(test.ops[0], ast.In)
                    and isinstance(test.comparators[0], (ast.Tuple, ast.List))):
                try:
                    return tuple(ast.literal_eval(test.comparators[0]))
                except ValueError:
                    return None
        if not any(p.kind == p.VAR_KEYWORD for p in inspect.signature(init).parameters.values()):
            break
    return None


def _head_pool_types() -> Tuple[str, ...]:
    """The pool types timm's ``select_adaptive_pool2d`` names (``pool_type == 'avg'`` ...), with '' (no pooling)."""
    from timm.layers import adaptive_avgmax_pool
    tree = ast.parse(inspect.getsource(adaptive_avgmax_pool.select_adaptive_pool2d))
    names = [c.value for node in ast.walk(tree) if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name)
             and node.left.id == 'pool_type' for c in node.comparators if isinstance(c, ast.Constant)]
    return ('',) + tuple(sorted(set(names)))


def _head_pools(value: Any) -> bool:
    """Whether timm's pooling head (``SelectAdaptivePool2d``, channels-last as Swin's) takes ``value``."""
    from timm.layers import SelectAdaptivePool2d
    if not isinstance(value, str):
        return False
    try:
        SelectAdaptivePool2d(pool_type=value, input_fmt='NHWC')
    except (AssertionError, ValueError):
        return False
    return True


def _source(klass: type) -> str:
    """The source of ``klass``, or '' where there is none (a builtin, a class made at run time)."""
    try:
        return inspect.getsource(klass)
    except (OSError, TypeError):
        return ''


@lru_cache(maxsize=None)
def _class_value_checks(model_cls: type) -> Dict[str, Tuple[Callable[[Any], bool], str]]:
    """Checks whose allowed values depend on the model class, read from the installed timm: ``global_pool`` in the
    list a constructor asserts, or (a class that hands it to its classifier head: Swin) one its pooling head takes."""
    checks = _layer_name_checks(model_cls)
    pools = _asserted_global_pools(model_cls)
    if pools is not None:
        checks['global_pool'] = (lambda v, allowed=pools: isinstance(v, str) and v in allowed, _one_of(pools))
    elif any('pool_type=global_pool' in _source(klass) for klass in model_cls.__mro__):
        checks['global_pool'] = (_head_pools, _one_of(_head_pool_types()))
    return checks


# layer kwargs given by name (--model-kwargs act_layer=relu arrives as text): timm's resolver for each, and its table
_LAYER_RESOLVERS = {'act_layer': ('get_act_layer', 'create_act', '_ACT_LAYER_DEFAULT'),
                    'norm_layer': ('get_norm_layer', 'create_norm', '_NORM_MAP'),
                    'embed_norm_layer': ('get_norm_layer', 'create_norm', '_NORM_MAP')}


def _layer_name_checks(model_cls: type) -> Dict[str, Tuple[Callable[[Any], bool], str]]:
    """Checks of a layer kwarg given as a name: one timm's resolver knows where the constructor (or a base its
    ``**kwargs`` flow to) resolves it (a ViT: an unknown name ended on a bare KeyError), none where no constructor does
    (CaiT, Swin: "'str' object is not callable")."""
    import importlib
    sources = [_source(klass) for klass in model_cls.__mro__]
    checks = {}
    for name, (resolver, module, table) in _LAYER_RESOLVERS.items():
        if not any(f'{resolver}({name})' in source for source in sources):
            checks[name] = (lambda v: not isinstance(v, str),
                            f'a layer class; {model_cls.__name__} takes no {name} by name, so leave it out')
            continue
        timm_module = importlib.import_module(f'timm.layers.{module}')
        names = sorted(getattr(timm_module, table, {}))

        def known(value: Any, resolve: Callable[[Any], Any] = getattr(timm_module, resolver)) -> bool:
            if not isinstance(value, str):
                return True
            try:
                resolve(value)
            except (KeyError, ValueError, AssertionError):
                return False
            return True
        checks[name] = (known, f'a name timm knows ({", ".join(names)}) or a layer class' if names else
                        'a name timm knows or a layer class')
    return checks


def _check_token_pooling(model_cls: type, kwargs: Dict[str, Any], defaults: Dict[str, Any], values: Dict[str, Any],
                         owner: Optional[str]) -> None:
    """Token pooling without a class token: timm asserted 'Token pooling needs the class token.', naming neither.
    ``values``: what a kwarg not given is (``{}``: only given ones are checked)."""
    names = ('class_token', 'global_pool')
    if any(k not in defaults or (k not in kwargs and k not in values) for k in names):
        return
    token, pool = (kwargs[k] if k in kwargs else values[k] for k in names)
    if token is False and pool == 'token':
        raise ValueError(f"{owner or owner_name(model_cls)}: class_token=False, global_pool='token': token pooling "
                         f"needs the class token; allowed: class_token=True, or another global_pool.")


def _check_heads_divide(model_cls: type, kwargs: Dict[str, Any], defaults: Dict[str, Any], values: Dict[str, Any],
                        owner: Optional[str]) -> None:
    """A width that one ``num_heads`` does not divide, for a class whose attention splits its width into heads
    (no ``head_dim`` kwarg): timm asserted 'dim should be divisible by num_heads', naming neither. ``values``: what a
    kwarg not given is (``{}``: only given ones are checked)."""
    names = ('embed_dim', 'num_heads')
    if 'head_dim' in defaults or any(k not in defaults or (k not in kwargs and k not in values) for k in names):
        return
    dim, heads = (kwargs[k] if k in kwargs else values[k] for k in names)
    if _is_int(dim, 1) and _is_int(heads, 1) and dim % heads:
        raise ValueError(f'{owner or owner_name(model_cls)}: embed_dim={dim}, num_heads={heads}: the heads do not '
                         f'divide the width; allowed: a num_heads that divides embed_dim (or an embed_dim that is a '
                         f'multiple of num_heads).')


def unused_options(kwargs: Dict[str, Any]) -> Dict[str, str]:
    """The options in a model-kwargs dict that its switches leave unused, each with the switch that does:
    ``shift_ratio`` (and slify's ``spt_post_norm=True``) with SPT off (Spool's shift is fixed at half a token),
    ``shift_directions`` with SPT and Spool off, PiT's ``pool_layout`` with Spool on (it picks the conv pooling Spool
    replaces). A switch not in ``kwargs`` takes its default (``spt`` on, ``spt_pool`` following ``spt``); a switch
    that is not a bool decides nothing."""
    spt = kwargs.get('spt', True)
    spool = spt if kwargs.get('spt_pool') is None else kwargs['spt_pool']
    unused = {}
    if spt is False and 'shift_ratio' in kwargs:
        unused['shift_ratio'] = 'spt=False'
    if spt is False and kwargs.get('spt_post_norm') is True:  # slify's: keep the stem's norm after SPT
        unused['spt_post_norm'] = 'spt=False'
    if spt is False and spool is False and 'shift_directions' in kwargs:
        unused['shift_directions'] = 'spt=False' + (', spt_pool=False' if kwargs.get('spt_pool') is False else '')
    if spool is True and 'pool_layout' in kwargs:
        unused['pool_layout'] = 'spt_pool=True' if kwargs.get('spt_pool') is True else 'spt_pool following spt=True'
    return unused


def check_options_used(kwargs: Dict[str, Any], owner: str) -> None:
    """Raise ``ValueError`` naming the first option of ``kwargs`` that its switches leave unused (a user who passes
    ``spt=False, shift_ratio=0.25`` would believe the ratio took effect)."""
    for name, switch in unused_options(kwargs).items():
        turn = "spt_pool=False" if name == 'pool_layout' else 'spt=True'
        raise ValueError(f'{owner}: {name}={kwargs[name]!r} is unused with {switch}; allowed: {name} left out, or '
                         f'{turn}.')


def without_unused_options(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """``kwargs`` less the options its switches leave unused: one set of user kwargs given to a model and to its
    baseline (SPT and Spool off) keeps only what each uses."""
    unused = unused_options(kwargs)
    return {k: v for k, v in kwargs.items() if k not in unused}


def with_switches(kwargs: Dict[str, Any], switches: Dict[str, Any]) -> Dict[str, Any]:
    """``kwargs`` given for one model, with ``switches`` (another Table 2 row's: the baseline's ``spt=False,
    lsa=False``) over them: what a switch turns off takes its options with it. SPT's options go with SPT (and
    Spool) off, and an ``lsa_mask`` / ``lsa_learn_temp`` given goes with ``lsa=False`` (kept, it would outlive the
    switch and make the baseline the paper's M or T); ``lsa_temp_ratio`` stays (Table 1 sets it on the baseline too).
    """
    dropped = set(switches) | ({'lsa_mask', 'lsa_learn_temp'} if switches.get('lsa') is False else set())
    return without_unused_options({**switches, **{k: v for k, v in kwargs.items() if k not in dropped}})


@dataclass(frozen=True)
class SlArgs:
    """Validated SPT / LSA switches; see the module docstring for their meaning."""
    spt: bool = True
    shift_ratio: float = 0.5
    shift_directions: str = 'diagonal'
    lsa: bool = True
    lsa_mask: Optional[bool] = None
    lsa_learn_temp: Optional[bool] = None
    lsa_temp_ratio: float = 1.0

    def __post_init__(self) -> None:
        check_bool('spt', self.spt)
        check_bool('lsa', self.lsa)
        check_optional_bool('lsa_mask', self.lsa_mask)
        check_optional_bool('lsa_learn_temp', self.lsa_learn_temp)
        shift_offsets(self.shift_directions)
        check_shift_ratio(self.shift_ratio)  # the pixel shift is checked again with the real patch size
        check_temp_ratio(self.lsa_temp_ratio, name='lsa_temp_ratio')

    @classmethod
    def pop_from(cls, kwargs: Dict[str, Any], model_cls: Optional[type] = None, spt_pool: Optional[bool] = None
                 ) -> 'SlArgs':
        """Remove the SL switches from a model-kwargs dict and return them validated.

        With ``model_cls`` (a model being built), first check that every kwarg is one that class (or the timm backbone
        it passes its ``**kwargs`` to) accepts, so a typo fails with the name and the allowed names instead of a bare
        TypeError, and then that no option is one its switches leave unused (``spt=False, shift_ratio=0.25``;
        ``spt_pool``: the model's Spool switch).
        """
        if model_cls is not None:
            check_model_kwargs(model_cls, kwargs)
        given = {k: kwargs.pop(k) for k in SL_ARG_NAMES if k in kwargs}
        args = cls(**given)
        if model_cls is not None:
            check_options_used({**given, **({} if spt_pool is None else {'spt_pool': spt_pool})},
                               owner_name(model_cls))
        return args

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @property
    def diag_mask(self) -> bool:
        return self.lsa if self.lsa_mask is None else self.lsa_mask

    @property
    def learn_temp(self) -> bool:
        return self.lsa if self.lsa_learn_temp is None else self.lsa_learn_temp

    @property
    def uses_lsa_layer(self) -> bool:
        """False when attention is exactly the baseline's (no mask, no learned or changed temperature)."""
        return self.diag_mask or self.learn_temp or self.lsa_temp_ratio != 1.0

    def lsa_kwargs(self) -> Dict[str, Any]:
        return dict(diag_mask=self.diag_mask, learn_temp=self.learn_temp, temp_ratio=self.lsa_temp_ratio)

    def spt_kwargs(self) -> Dict[str, Any]:
        return dict(shift_ratio=self.shift_ratio, shift_directions=self.shift_directions)

    def inject_embed_layer(self, model_kwargs: Dict[str, Any], key: str = 'embed_layer', **embed_kwargs: Any) -> None:
        """With ``spt``, set a backbone's patch-embedding kwarg ``key`` to :class:`ShiftedPatchEmbed` (in place)."""
        if not self.spt:
            return
        if key in model_kwargs:
            raise ValueError(f'{key} cannot be combined with spt=True (SPT is the patch embedding); pass spt=False.')
        model_kwargs[key] = partial(ShiftedPatchEmbed, **self.spt_kwargs(), **embed_kwargs)

    def ablation_tag(self) -> str:
        """Paper-style name of this configuration: 'base', 'S', 'L', 'T', 'M', 'SL', 'ST', 'SM' (+ temperature)."""
        parts = 'S' if self.spt else ''
        if self.diag_mask and self.learn_temp:
            parts += 'L'
        elif self.learn_temp:
            parts += 'T'
        elif self.diag_mask:
            parts += 'M'
        if self.lsa_temp_ratio != 1.0:
            parts += f'@{self.lsa_temp_ratio:g}t'
        return parts or 'base'


SL_ARG_NAMES: Tuple[str, ...] = tuple(f.name for f in fields(SlArgs))

"""Value types of the harness's argparse options (standard library only: ``timm-sl --help`` imports them): a bad
value is an ``argparse.ArgumentTypeError`` whose one line says what was given and what is allowed. The ``timm-sl``
command and the benchmarks share them."""
import argparse
import ast
from typing import Any, Dict, Sequence


__all__ = ['MAX_SEED', 'OneLineParser', 'check_file_place', 'dataset_name', 'kwarg_words', 'output_file',
           'non_negative_int', 'positive_float', 'positive_int', 'seed', 'shift_ratio', 'timm_benchmark']


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage error is one line on stderr (``PROG: error: ...``, without argparse's usage
    lines, which buried it) and exit status 2: the ``timm-sl`` command's and the benchmarks'."""
    hint = ''  # appended to an error (the ``timm-sl`` command's: where a train.py option goes)

    def error(self, message: str):
        self.exit(2, f'{self.prog}: error: {message}{self.hint}\n')


def kwarg_words(words: Sequence[str]) -> Dict[str, Any]:
    """``--model-kwargs`` words (``KEY=VALUE``) as a dict; a value is read as a Python literal (``False``, ``6``,
    ``(1,1,1)``), else kept as a string, as timm's ``ParseKwargs`` does (not imported: it would load torch for
    ``--help``). ``timm-sl``'s own ``--model-kwargs`` and those ``reproduce`` passes on to train.py read them alike.

    Raises:
        ValueError: a word that is not ``KEY=VALUE``, or a KEY given twice (the last would be built, the first dropped
            without a word).
    """
    kwargs: Dict[str, Any] = {}
    given: Dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition('=')
        if not sep or not key.isidentifier():
            raise ValueError(f'{word!r} is not KEY=VALUE; allowed: words like depth=6 mlp_ratio=2')
        if key in given:
            raise ValueError(f'{key} given twice ({given[key]} {word}); allowed: each KEY once')
        given[key] = word
        try:
            kwargs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            kwargs[key] = value
    return kwargs


def dataset_name(text: str) -> str:
    """A dataset name for a card: not empty (``--dataset "$UNSET"`` was taken as no dataset, without a word)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; expected a dataset name such as 'cifar10' (leave "
                                         "the option out for the run's own)")
    return text


def _int_at_least(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not allowed; expected an integer >= {least}') from None
    if value < least:
        raise argparse.ArgumentTypeError(f'{value} is not allowed; expected an integer >= {least}')
    return value


def positive_int(text: str) -> int:
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """A count that may be none (the benchmarks' ``--warmup``: ``-1`` was taken as 0 without a word)."""
    return _int_at_least(text, 0)


MAX_SEED = 2 ** 32 - 1  # numpy's (random_seed seeds python, numpy and torch alike)


def seed(text: str) -> int:
    """A seed numpy takes: 0 to 2**32 - 1 (``-1`` reached numpy as 'Seed must be between ...', naming no option)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not allowed; expected an integer from 0 to {MAX_SEED}') from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f'{value} is not allowed; expected an integer from 0 to {MAX_SEED}')
    return value


def positive_float(text: str) -> float:
    """A finite number above 0 (a learning rate): ``nan``, ``inf`` and ``-1`` reached torch as 'Invalid learning
    rate: nan', naming no option."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not allowed; expected a number > 0, e.g. 1e-3') from None
    if not 0 < value < float('inf'):
        raise argparse.ArgumentTypeError(f'{text} is not allowed; expected a finite number > 0, e.g. 1e-3')
    return value


def shift_ratio(text: str) -> float:
    """A number for ``--shift-ratio`` (its range is checked with the patch size): argparse's own error for a word
    ("invalid float value: ''") said nothing of what is allowed."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a number; allowed: a number in (0, 1], e.g. 0.5') from None


def check_file_place(text: str, what: str) -> None:
    """Refuse, before any work, a file ``text`` that could not be written (:func:`timm_sl.tools.paths.check_path`: a
    folder, a FIFO, its folder missing or a file, a link that loops or whose folder is missing, a folder the system
    will not write into); ``what`` (``a chart file``) is what belongs there.

    Raises:
        argparse.ArgumentTypeError: one line naming ``text``, what was wrong and what is allowed.
    """
    from .paths import FILE, PathRule
    _check(text, PathRule(what, FILE, writes=True))


def _check(text: str, rule: 'PathRule') -> None:
    """:func:`timm_sl.tools.paths.check_path` for an option's ``type``: its refusal as argparse's error."""
    from .paths import check_path
    try:
        check_path(text, rule)
    except (OSError, ValueError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def timm_benchmark(text: str) -> str:
    """timm's ``benchmark.py`` that an option names: a readable regular file, checked before any work (missing, a
    folder or a FIFO was found after every measurement, running it)."""
    from .paths import PathRule
    _check(text, PathRule("timm's benchmark.py", usual_name='benchmark.py'))
    return text


def output_file(text: str) -> str:
    """A file an option writes (a table, a CSV), checked before any work (:func:`check_file_place`)."""
    check_file_place(text, 'a file to write')
    return text

"""Every path a ``timm-sl`` command reads or writes, written down once (:data:`COMMAND_PATHS`), and the one check
(:func:`check_path`) each of them gets before the command does any work.

A rule says what belongs at a path (a file, a folder, either), whether the command writes there, whether a link is
allowed there, and what inside a folder (or beside a file: a checkpoint's run folder) is checked with it. The check
refuses, in one line naming the path, every kind of thing that is not what the rule allows: nothing there (for what is
read), a folder for a file or a file for a folder, a FIFO / socket / device (reading one waits forever or never
ends), a link to nothing, a link that loops, a link where the command writes (it would write over the file the link
names, a user's, elsewhere), a place below a file, a place the command may not read or write. Commands still check
what a file holds; what kind of thing is there is decided here. Torch-free: runs before a command imports torch.
"""
import argparse
import errno
import fnmatch
import os
import stat
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, Iterator, Mapping, Optional, Sequence, Union

from .errors import partial_of, shown
from .files import ANALYSED_IMAGE_SUFFIXES, check_link_target, check_not_link, kind_of, unreadable_folder, walk

__all__ = ['FILE', 'FOLDER', 'EITHER', 'PathRule', 'check_path', 'check_command_paths', 'COMMAND_PATHS',
           'RUN_FOLDER']

FILE, FOLDER, EITHER = 'file', 'folder', 'file or folder'


@dataclass(frozen=True)
class PathRule:
    """What may be at one path of a command.

    Args:
        what: What belongs there, as an error names it ('a train.py checkpoint').
        kind: :data:`FILE`, :data:`FOLDER` or :data:`EITHER`.
        writes: The command writes there: it need not exist yet (a file's folder must; a folder is created with its
            parents), and the place must take new files.
        link: A link there is allowed (read through; where the command writes, the file or folder it names is
            written). False where writing through a link would replace a user's file elsewhere.
        contents: Inside a folder (or, with ``beside``, the folder of a file): glob pattern -> rule of what matches;
            nothing need match, what does is checked.
        beside: ``contents`` applies to the folder holding a file (a checkpoint's run folder).
        allowed: What the user may do about a wrong thing there or inside it ('move it away', 'another --out'):
            every refusal ends with it ('; allowed: X', or ', or X' after a list of its own); '' adds nothing.
        usual_name: The name a file read there usually has ('train.py'): a folder given for it that holds a file of
            that name is said to (the user named its folder).
        suffixes: Files named after the path with another suffix (suffix -> rule): attention's --out with .json.
        passes_unreadable: A folder below it this user may not read or enter is passed, left to the command (release
            looks for runs past a disk's lost+found, and says so); otherwise refused, naming it.
    """
    what: str
    kind: str = FILE
    writes: bool = False
    link: bool = True
    contents: Optional[Mapping[str, 'PathRule']] = None
    beside: bool = False
    allowed: str = ''
    usual_name: str = ''
    suffixes: Optional[Mapping[str, 'PathRule']] = None
    passes_unreadable: bool = False


def _check_link(path: Path, name: str, rule: PathRule, who: str, inside: bool) -> None:
    """Refuse a link at ``path`` that the rule does not allow there, that loops or that names nothing (where a file is
    written through a link, nothing at its end is fine: the file is created there)."""
    if not rule.link and rule.kind == FOLDER:
        raise ValueError(f'{name} is a link to {shown(os.readlink(path))} where {who} writes {rule.what}, which would '
                         f'write into the folder it links to; allowed: remove the link')
    if not rule.link:
        check_not_link(path, who)
    try:
        path.stat()
        return
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ValueError(f'{name} is a link that loops ({shown(os.readlink(path))}); expected '
                             f'{rule.what}') from None
        if e.errno not in (errno.ENOENT, errno.ENOTDIR):
            raise type(e)(f'{name} is a link that cannot be followed ({(e.strerror or str(e)).lower()}); expected '
                          f'{rule.what}') from None
    if rule.writes and rule.kind == FOLDER:
        raise FileNotFoundError(f'{name} is a link to {shown(os.readlink(path))}, which does not exist; expected '
                                f'{rule.what} (allowed: a link to a folder, or no link)')
    if rule.writes:  # the line says the path is a link: the folder it names is the link's, not the path's
        _check_new(path.parent / os.readlink(path), f'{name} (a link to {shown(os.readlink(path))})', rule)
    elif inside:  # what a folder holds need not be there
        check_link_target(path, rule.what)
    else:
        raise FileNotFoundError(f'{name} is a link to {shown(os.readlink(path))}, which does not exist; expected '
                                f'{rule.what} (allowed: it, or a link to it)')


def _check_takes_new_files(folder: Path, name: str, rule: PathRule, named: bool = False) -> None:
    """Refuse a ``folder`` the system will not create files in (read-only, /proc, /sys): found now, by creating and
    removing an empty file, not after the work (``os.access`` says yes to root everywhere). ``named``: ``name`` is
    the folder itself, so the line does not name it twice."""
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix='.timm-sl-probe-')
        try:
            os.close(handle)
        finally:  # also when interrupted (Ctrl-C): the gate leaves nothing behind
            os.unlink(probe)
    except OSError as e:
        where = 'it' if named else f'folder {shown(folder)}'
        raise type(e)(f'{name}: cannot write into {where} ({(e.strerror or str(e)).lower()}), where {rule.what} '
                      f'goes; allowed: a place this user may write (not /proc, /sys)') from None


def _check_new(path: Path, name: str, rule: PathRule) -> None:
    """A path the command writes that is not there yet: below a folder that exists (a file's own folder; for a folder,
    its parents are created), with no link to nothing or file on the way, that takes new files."""
    for parent in path.parents:
        if parent.is_symlink() and not parent.exists():
            raise FileNotFoundError(f'{name}: {shown(parent)} is a link to {shown(os.readlink(parent))}, which does '
                                    f'not exist; allowed: a link to a folder, or no link')
        if parent.exists():
            break
    existing = next(p for p in path.parents if p.exists())
    if not existing.is_dir():
        raise NotADirectoryError(f'{name}: {shown(existing)} is {kind_of(existing)}, not a folder; cannot create '
                                 f'{rule.what} below it')
    if rule.kind == FILE and existing != path.parent:
        raise FileNotFoundError(f'{name}: folder {shown(path.parent)} does not exist, where {rule.what} goes; create '
                                f'it first')
    limit = os.pathconf(existing, 'PC_NAME_MAX')  # below a new folder the system says nothing of a name until made
    too_long = [part for part in path.parts if len(os.fsencode(part)) > limit]
    if too_long:
        raise OSError(f'{name}: file name too long ({len(os.fsencode(too_long[0]))} bytes in one name, {limit} '
                      f'allowed); expected {rule.what}')
    _check_takes_new_files(existing, name, rule)


def _matches(folder: Path, pattern: str, passes_unreadable: bool = False) -> Iterator[Path]:
    """What ``pattern`` names in ``folder``: a name, a wildcard name (``fnmatch``), ``**/`` it at any depth, or either
    below the folders a wildcard names (``*/config.json``); links to nothing included (``Path.glob`` leaves them out,
    and they are what is looked for). A folder this user may not read or enter is refused in one line naming it (a
    name looked up in it: not that name's 'permission denied'), or passed with ``passes_unreadable``."""
    head, _, rest = pattern.partition('/')
    if head == '**':
        below = walk(folder, skipped=[] if passes_unreadable else None)  # refused or passed as it is by the commands
        for sub in [folder, *sorted(Path(root) for root, _, _ in below if Path(root) != folder)]:
            yield from _matches(sub, rest, passes_unreadable)
    elif rest and any(c in head for c in '*?['):
        for sub in _matches(folder, head, passes_unreadable):
            if sub.is_dir():
                yield from _matches(sub, rest, passes_unreadable)
    elif any(c in pattern for c in '*?['):
        yield from sorted(p for p in folder.iterdir()  # a hidden name only where the pattern says so, as a shell does
                          if fnmatch.fnmatchcase(p.name, pattern) and (pattern[0] == '.' or p.name[0] != '.'))
    else:
        try:
            there = _is_there(folder / pattern)
        except PermissionError as e:  # a folder that may be listed, not entered (r without x)
            if not passes_unreadable:
                unreadable_folder(None)(PermissionError(e.errno, e.strerror, str(folder)))
            there = False
        if there:
            yield folder / pattern


def _is_there(path: Path) -> bool:
    """Something is at ``path``: a link to nothing too."""
    return path.exists() or path.is_symlink()


def _check_contents(folder: Path, rule: PathRule, who: str) -> None:
    for pattern, inner in rule.contents.items():
        for path in _matches(folder, pattern, rule.passes_unreadable):
            check_path(path, inner, who=who, inside=True)
        literal = '/' not in pattern and not any(c in pattern for c in '*?[')
        if literal and inner.writes and inner.kind == FILE and not _is_there(folder / pattern):
            check_path(folder / pattern, inner, who=who, inside=True)  # not there yet: its partial file may be


def _with_allowed(message: str, allowed: str) -> str:
    """``message`` naming ``allowed`` too: one more item of its 'allowed:' list, or '; allowed: ...' after it."""
    if not allowed or message.endswith(f'or {allowed})') or message.endswith(f'or {allowed}'):
        return message
    if 'allowed: ' not in message:
        return f'{message}; allowed: {allowed}'
    inside = message.endswith(')') and message.rfind('(allowed: ') == message.rfind('(')  # '... (allowed: a, b)'
    return f'{message[:-1]}, or {allowed})' if inside else f'{message}, or {allowed}'


def check_path(path: Union[str, Path], rule: PathRule, option: str = '', who: str = 'timm-sl',
               inside: bool = False) -> None:
    """Refuse, in one line naming ``path`` (and the ``option`` that gave it), anything at ``path`` that ``rule`` does
    not allow; then check what ``rule.contents`` names inside it. ``who`` (``timm-sl export``) is what writes there;
    ``inside``: ``path`` is what a checked folder holds.

    Raises:
        FileNotFoundError: nothing there where something is read, or a link to nothing.
        IsADirectoryError / NotADirectoryError: a folder for a file, a file for a folder or above a new path.
        PermissionError / OSError: a place that cannot be read or written.
        ValueError: a FIFO, socket or device; a link that loops; a link where the command writes.
    """
    try:
        if str(path) == '':  # Path('') is '.', where a command takes '' for no path given (`if args.checkpoint`)
            raise FileNotFoundError(f"{option or 'a path'} is empty (''); expected {rule.what}")
        _check_path(Path(path), rule, option, who, inside)
        if rule.writes and rule.kind == FILE:
            _check_partial(Path(path), rule, who)
    except (OSError, ValueError) as e:
        if not rule.allowed:
            raise
        raise type(e)(_with_allowed(str(e), rule.allowed)) from None
    for suffix, companion in (rule.suffixes or {}).items():
        check_path(Path(path).with_suffix(suffix), companion, who=who, inside=inside)


def _check_partial(path: Path, rule: PathRule, who: str) -> None:
    """The file a written ``path`` is first written to (:func:`~timm_sl.tools.errors.partial_of`, beside where a link
    at ``path`` points): nothing or a regular file, no link (written through, the file it names would be replaced,
    the link moved to ``path``), no folder or FIFO (found after the work, or waited on forever)."""
    target = path.resolve() if path.is_symlink() else path
    partial = partial_of(target)
    if _is_there(partial):
        _check_path(partial, PathRule(f'{rule.what} half-written (a file it leaves only when cut short)', FILE,
                                      writes=True, link=False), '', who, True)


def _check_reachable(path: Path, name: str, rule: PathRule) -> None:
    """Refuse a path the system cannot look up, for what it is: a link on the way that loops (not 'does not exist'),
    a name too long, a folder on the way this user may not enter (not the system's line, which names no option)."""
    try:
        os.lstat(path)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            return  # nothing there, or a file on the way: what is done about it depends on the rule
        if e.errno == errno.ELOOP:
            for parent in reversed(path.parents):
                if parent.is_symlink() and _loops(parent):
                    raise ValueError(f'{name}: {shown(parent)} is a link that loops ({shown(os.readlink(parent))}); '
                                     f'expected {rule.what}') from None
        closed = next((p for p in reversed(path.parents) if p.is_dir() and not os.access(p, os.X_OK)), None)
        if e.errno == errno.EACCES and closed is not None:  # the folder is what is wrong, not the name in it
            raise PermissionError(f'{name}: folder {shown(closed)} may not be entered by this user (permission '
                                  f'denied); expected {rule.what}; allowed: a folder this user may read and enter')
        raise type(e)(f'{name}: {(e.strerror or str(e)).lower()}; expected {rule.what}') from None


def _replaceable(path: Path) -> bool:
    """Whether this user may replace the file ``path`` by a new one moved over it (what a written file is; through a
    link, the file it names is replaced, in that file's folder): in a sticky folder (/tmp) only the file's owner, the
    folder's and root may, however writable the file is."""
    parent = path.parent.stat()
    return not parent.st_mode & stat.S_ISVTX or os.geteuid() in (0, parent.st_uid, os.lstat(path).st_uid)


def _loops(path: Path) -> bool:
    try:
        path.stat()
    except OSError as e:
        return e.errno == errno.ELOOP
    return False


def _check_home(path: Path, name: str) -> None:
    """Refuse a path that begins with a ``~`` the shell left as it is (it was quoted) where there is no such folder:
    read, it is not found; written, a folder named ``~`` would be made here, not the path in the home folder."""
    head = Path(path.parts[0]) if path.parts else path
    expanded = os.path.expanduser(str(path))
    if expanded != str(path) and not _is_there(head):
        raise FileNotFoundError(f'{name}: there is no folder {shown(head)} here (a shell expands ~ only unquoted); '
                                f'allowed: {shown(expanded)}')


def _check_path(path: Path, rule: PathRule, option: str, who: str, inside: bool) -> None:
    name = f'{option} {shown(path)}' if option else shown(path)
    _check_home(path, name)
    _check_reachable(path, name, rule)
    if path.is_symlink():
        _check_link(path, name, rule, who, inside)
        if not path.exists():  # a file written through a link to nothing yet
            return
    if not path.exists():
        if not rule.writes:
            raise FileNotFoundError(f'{name} does not exist; expected {rule.what}')
        _check_new(path, name, rule)
        return
    if path.is_dir():
        if rule.kind == FILE:
            usual = path / rule.usual_name if rule.usual_name else None
            there = f' ({shown(usual)} is there)' if usual is not None and usual.is_file() else ''
            raise IsADirectoryError(f'{name} is a folder; expected {rule.what}{there}')
    elif not path.is_file():
        wanted = {FILE: 'a regular file', FOLDER: 'a folder', EITHER: 'a regular file or a folder'}[rule.kind]
        raise ValueError(f'{name} is {kind_of(path)}, not {wanted}; expected {rule.what}')
    elif rule.kind == FOLDER:
        raise NotADirectoryError(f'{name} is a file; expected {rule.what}')
    folder = path.is_dir()
    # a folder written into, or a file replaced by a new one beside it (write_atomically); first: the system's reason
    # (a read-only file system). A file a checked folder holds: that folder's probe stands for it (one per folder)
    if rule.writes and (folder or not inside):
        _check_takes_new_files(path if folder else path.parent, name, rule, named=folder)
    if not os.access(path, (os.W_OK if rule.writes else os.R_OK) | (os.X_OK if folder else 0)):
        raise PermissionError(f'{name} is not {"writable" if rule.writes else "readable"} by this user; expected '
                              f'{rule.what}')
    replaced = path.resolve() if path.is_symlink() else path
    if rule.writes and not folder and not _replaceable(replaced):
        whose = f'a link to {shown(replaced)}, ' if replaced != path else ''
        raise PermissionError(f'{name} is {whose}another user\'s file in a sticky folder (as /tmp), which only its '
                              f'owner may replace or remove; expected {rule.what}')
    if rule.contents:
        if folder:
            _check_contents(path, rule, who)
        elif rule.beside:
            _check_contents(path.parent, rule, who)


# ---- the table ----------------------------------------------------------------------------------------------------

def _written(rules: Mapping[str, PathRule], allowed: str = '') -> Dict[str, PathRule]:
    """``rules`` where a command writes them: no link (it would replace the file the link names); ``allowed``, what a
    user may do about a wrong thing there, where given."""
    return {name: replace(rule, writes=True, link=False, allowed=allowed or rule.allowed)
            for name, rule in rules.items()}


def _side_files(files: Mapping[str, str]) -> Dict[str, PathRule]:
    """The files (name -> what) a ``timm-sl prepare-*`` writes beside its split folders: a link there is the user's,
    refused by the command, replaced by the file with --overwrite (never written through: the file it names is kept)."""
    return {name: PathRule(what, writes=True, allowed=_MOVE_AWAY) for name, what in files.items()}


_MOVE_AWAY = 'move it away'  # what a user does about a wrong thing where a command writes a file of its own


def _split_folders(splits: Sequence[str], command: str) -> Dict[str, PathRule]:
    """The split folders a ``timm-sl prepare-*`` writes (name -> rule), and the hidden ones it stages each in first
    (``.train.prepare-svhn``): replaced whole, so a FIFO there must be found first (removing one opens it, and waits
    for a writer forever). A link to a split folder is the command's to judge (read as it is when nothing is to be
    written); one at a staging folder would have the split written into the folder it names. A split folder is
    replaced in the root (which takes the new files), never written into: no probe there, so a rerun that writes
    nothing leaves it as it was, its time too."""
    folder = PathRule('', FOLDER, writes=True, allowed=_MOVE_AWAY)
    return {name: rule for split in splits for name, rule in (
        (split, replace(folder, what=f'the {split} split folder', writes=False)),
        (f'.{split}.{command}', replace(folder, what=f"{command}'s staging folder of {split}", link=False)))}

# every file a train.py run folder holds that timm-sl reads: train.py's and those ``timm-sl reproduce`` adds
RUN_FOLDER: Dict[str, PathRule] = {
    'args.yaml': PathRule("train.py's args.yaml"),
    'summary.csv': PathRule("train.py's summary.csv"),
    **{name: PathRule('a checkpoint file') for name in ('model_best.pth.tar', 'last.pth.tar', 'checkpoint-*.pth.tar')},
    'done.json': PathRule("timm-sl reproduce's done.json"),
    'sessions.json': PathRule("timm-sl reproduce's sessions.json"),
    'run.json': PathRule("timm-sl reproduce's run.json"),
    'command.txt': PathRule("the run's train.py command line"),
    'train.log': PathRule("timm-sl reproduce's train.log"),
}

CHART = PathRule('a chart file', writes=True, link=True)
_NUMBERS_ALLOWED = 'an --out whose .json name is free or holds numbers of an earlier timm-sl attention'
CHECKPOINT = PathRule('a checkpoint file, a train.py run folder or an exported folder', EITHER, contents=RUN_FOLDER,
                      beside=True)
LABEL_NAMES = PathRule('the class names (a JSON list or one name per line)')
TRAIN_SCRIPT = PathRule("timm's train.py")
# the train.py whose defaults a card's recipe is compared with (export and release)
_RECIPE_SCRIPT = replace(TRAIN_SCRIPT, usual_name='train.py',
                         what=f'{TRAIN_SCRIPT.what} (from a checkout of '
                              f'https://github.com/huggingface/pytorch-image-models)')
_EXPORTED = {name: PathRule(f'the {name} of an export') for name in ('model.safetensors', 'config.json', 'README.md')}
# what kld / attention read in a folder: at any depth, hidden names too, the suffix in any case ('.Png')
_IMAGES = {f'**/{hidden}*.' + ''.join(f'[{c}{c.upper()}]' for c in suffix[1:]): PathRule('an image file')
           for suffix in ANALYSED_IMAGE_SUFFIXES for hidden in ('', '.')}

# command -> argument (argparse's dest) -> rule; an argument left None by the user is not checked
COMMAND_PATHS: Dict[str, Dict[str, PathRule]] = {
    'demo': {'out': CHART},
    'export': {
        'checkpoint': CHECKPOINT,
        'out': PathRule('the export folder', FOLDER, writes=True, contents=_written(_EXPORTED, _MOVE_AWAY)),
        'summary': PathRule("train.py's summary.csv"),
        'label_names': LABEL_NAMES,
        'train_script': _RECIPE_SCRIPT,
    },
    'reproduce': {
        # the record of a prepare-* there says what the runs train on: unread, they would be resumed on any data
        'data_dir': PathRule("the dataset root (train.py's --data-dir)", FOLDER, contents={
            name: PathRule(f'the record of timm-sl prepare-{dataset}, which says what the folder holds')
            for name, dataset in (('fashion_mnist.json', 'fashion-mnist'), ('svhn.json', 'svhn'))}),
        # what is refused inside --out is left as it is by another --out: the refusals say so
        'out': PathRule('the reproduce output folder', FOLDER, writes=True, allowed='another --out', contents={
            **_written({name: PathRule(f'the {name} of the report', FILE) for name in (
                'report.md', 'results.json', 'top1.png', 'curves.png', 'report_manifest.json')}),
            'runs': PathRule('the folder of the runs', FOLDER, writes=True, contents={
                # a run's name is FAMILY-VARIANT-sSEED; what else a user keeps in runs/ is not reproduce's
                '*-s*': PathRule('a run folder', FOLDER, writes=True, contents=_written(RUN_FOLDER)),
                '.reproduce.lock': PathRule("reproduce's lock file", writes=True, link=False)}),
        }),
        'train_script': replace(TRAIN_SCRIPT, what=f"{TRAIN_SCRIPT.what} (from a checkout of "
                                                   f"https://github.com/huggingface/pytorch-image-models)"),
    },
    'release': {
        'runs': PathRule('a timm-sl reproduce output or train.py run folder', FOLDER, passes_unreadable=True,
                         contents={**{f'**/{name}': rule for name, rule in RUN_FOLDER.items()}}),
        'out': PathRule('the release folder', FOLDER, writes=True, contents=_written({
            **{name: PathRule(f'the {name} of a release') for name in (
                'release.json', 'pretrained_entries.json', 'release_manifest.json')},
            **{f'*/{name}': PathRule(f'the {name} of a released model') for name in _EXPORTED}}, _MOVE_AWAY)),
        'label_names': LABEL_NAMES,
        'train_script': _RECIPE_SCRIPT,
    },
    'push': {'folder': PathRule('a folder written by timm-sl export or release', FOLDER, contents={
        name: replace(rule, allowed='export again') for name, rule in _EXPORTED.items()})},
    'temperature': {'checkpoint': CHECKPOINT, 'out': CHART},
    'kld': {'images': PathRule('an image file or folder', EITHER, contents=_IMAGES), 'checkpoint': CHECKPOINT,
            'compare_checkpoint': CHECKPOINT, 'out': CHART},
    'attention': {'images': PathRule('an image file or folder', EITHER, contents=_IMAGES), 'checkpoint': CHECKPOINT,
                  'compare_checkpoint': CHECKPOINT, 'out': replace(CHART, suffixes={'.json': replace(
                      CHART, what="attention's numbers (--out with .json)", allowed=_NUMBERS_ALLOWED)})},
    'receptive-field': {'checkpoint': CHECKPOINT},
    'prepare-tiny-imagenet': {'root': PathRule('the Tiny-ImageNet folder holding train/ and val/', FOLDER, writes=True,
                                               contents={
        'wnids.txt': PathRule("Tiny-ImageNet's wnids.txt"),
        'val/val_annotations.txt': PathRule("Tiny-ImageNet's val/val_annotations.txt"),
        'val': PathRule("Tiny-ImageNet's val folder", FOLDER, writes=True, link=False),
        'train': PathRule("Tiny-ImageNet's train folder", FOLDER, writes=True, link=False)})},
    'prepare-svhn': {
        'root': PathRule("the SVHN output folder (train.py's --data-dir)", FOLDER, writes=True,
                         contents={**_side_files({'svhn.json': 'the record of a prepare-svhn run'}),
                                   **_split_folders(('train', 'test', 'extra'), 'prepare-svhn')}),
        'source': PathRule("the folder of SVHN's .mat files", FOLDER, contents={
            f'{split}_32x32.mat': PathRule(f"SVHN's {split}_32x32.mat") for split in ('train', 'test', 'extra')}),
    },
    'prepare-fashion-mnist': {
        'root': PathRule("the Fashion-MNIST output folder (train.py's --data-dir)", FOLDER, writes=True,
                         contents={**_side_files({'fashion_mnist.json': 'the record of a prepare-fashion-mnist run',
                                               'label_names.txt': 'the class names'}),
                                   **_split_folders(('train', 'test'), 'prepare-fashion-mnist')}),
        'source': PathRule("the folder of Fashion-MNIST's idx files", FOLDER, contents={
            '*-ubyte*': PathRule("a Fashion-MNIST idx file")}),
    },
}


def check_command_paths(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check every path ``args`` gives (:data:`COMMAND_PATHS` of ``args.command``; ``parser``, the command's own,
    names the option that gave it) before the command runs."""
    # argparse has no public list of a parser's arguments: _actions is where it keeps them
    options = {action.dest: action.option_strings[-1] if action.option_strings else '' for action in parser._actions}
    for dest, rule in COMMAND_PATHS.get(args.command, {}).items():
        value = getattr(args, dest, None)
        for path in value if isinstance(value, (list, tuple)) else [value]:
            if path is not None:
                check_path(path, rule, options[dest], who=f'timm-sl {args.command}')

"""The table of every path a command reads or writes (timm_sl.tools.paths): each kind of wrong thing at each path of
each command is refused in one line naming it, before the command does any work; a good thing there passes."""
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from timm_sl.tools import cli
from timm_sl.tools.errors import shown
from timm_sl.tools.paths import COMMAND_PATHS, EITHER, FILE, FOLDER, PathRule, check_path


class _Reached(Exception):
    """Raised where a command would start its work: every path passed the table."""


@pytest.fixture
def reach(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # default outputs (reproduce/, sl_demo.png) are checked in a folder of the test's
    def reached():
        raise _Reached
    monkeypatch.setattr(cli, '_register_models', reached)


# ---- the kinds of wrong thing -------------------------------------------------------------------------------------

def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _socket(path: Path) -> Path:
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
    return path


def _dangling(path: Path) -> Path:
    path.symlink_to(path.parent / 'no-folder' / 'nothing-here')  # written through, a file could not be made there
    return path


def _loop(path: Path) -> Path:
    path.symlink_to(path)
    return path


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _file(path: Path) -> Path:
    path.write_text('x')
    return path


def _below_a_file(path: Path) -> Path:
    path.write_text('x')
    return path / 'below'


def _link_to_user_file(path: Path) -> Path:
    user = path.parent / 'users-own-file'
    user.write_text('keep me')
    path.symlink_to(user)
    return path


def _missing(path: Path) -> Path:
    return path


def _unwritable(path: Path) -> Path:
    return Path('/proc/timm-sl-test') / path.name


def _below_a_looping_link(path: Path) -> Path:
    (path.parent / 'loop').symlink_to('loop')
    return path.parent / 'loop' / path.name


def _name_too_long_below_a_new_folder(path: Path) -> Path:
    return path.parent / 'new' / ('x' * 300 + path.suffix)


def _empty(path: Path) -> str:
    return ''


def _name_too_long(path: Path) -> Path:
    return path.parent / ('x' * 300 + path.suffix)


def hostile_kinds(rule: PathRule) -> Dict[str, object]:
    """The wrong things for ``rule``, by name: each is refused wherever ``rule`` applies."""
    kinds = dict(fifo=_fifo, socket=_socket, dangling_link=_dangling, looping_link=_loop,
                 below_a_looping_link=_below_a_looping_link, name_too_long=_name_too_long,
                 name_too_long_below_a_new_folder=_name_too_long_below_a_new_folder, empty=_empty)
    if rule.kind == FILE:
        kinds['folder'] = _folder
    if rule.kind == FOLDER:
        kinds['file'] = _file
    if rule.writes:
        kinds.update(below_a_file=_below_a_file, unwritable=_unwritable)
    else:
        kinds['missing'] = _missing
    if not rule.link:
        kinds['link_to_a_users_file'] = _link_to_user_file
    return kinds


def _name(rule: PathRule) -> str:
    """A name for the path under test that its option takes (a chart's has an image extension)."""
    return 'it.png' if 'chart' in rule.what else 'it'


def _good(path: Path, rule: PathRule) -> Path:
    """Something ``rule`` allows at ``path``: an empty folder or file, or nothing where the command writes."""
    if rule.writes:
        return path
    if rule.kind == FOLDER:
        path.mkdir()
    else:
        path.write_text('x')
    return path


# ---- check_path alone ---------------------------------------------------------------------------------------------

_RULES = {
    'read file': PathRule('a thing', FILE), 'read folder': PathRule('a thing', FOLDER),
    'read either': PathRule('a thing', EITHER), 'written file': PathRule('a thing', FILE, writes=True),
    'written folder': PathRule('a thing', FOLDER, writes=True),
    'written file, no link': PathRule('a thing', FILE, writes=True, link=False),
}
_UNIT_CASES = [(r, k) for r, rule in _RULES.items() for k in hostile_kinds(rule)]


@pytest.mark.parametrize('rule_name,kind', _UNIT_CASES, ids=[f'{r}-{k}' for r, k in _UNIT_CASES])
def test_check_path_refuses_each_wrong_kind_in_one_line_naming_the_path(tmp_path, rule_name, kind):
    rule = _RULES[rule_name]
    path = hostile_kinds(rule)[kind](tmp_path / 'target')
    with pytest.raises((OSError, ValueError)) as e:
        check_path(path, rule, '--opt')
    message = str(e.value)
    assert len(message.splitlines()) == 1 and str(path) in message, message
    assert 'a thing' in message or not rule.link and 'remove the link' in message, message
    if kind == 'link_to_a_users_file':
        assert (tmp_path / 'users-own-file').read_text() == 'keep me'


@pytest.mark.parametrize('rule_name,kind', _UNIT_CASES, ids=[f'{r}-{k}' for r, k in _UNIT_CASES])
def test_a_name_with_a_newline_is_refused_in_one_line(tmp_path, rule_name, kind):
    """The refusals of a link where a file is written and of a link to nothing inside a folder named the link and
    where it points as they are: a newline there broke the line in two."""
    rule = _RULES[rule_name]
    (tmp_path / 'new\nline').mkdir()
    path = hostile_kinds(rule)[kind](tmp_path / 'new\nline' / 'target')
    with pytest.raises((OSError, ValueError)) as e:
        check_path(path, rule, '--opt')
    assert len(str(e.value).splitlines()) == 1 and shown(path) in str(e.value), str(e.value)
    folder = PathRule('a folder', FOLDER, contents={'*': PathRule('a thing')})
    with pytest.raises(FileNotFoundError, match=re.escape("link to 'no\\nthing', which does not exist")):
        (tmp_path / 'new\nline' / 'dangling').symlink_to('no\nthing')
        check_path(tmp_path / 'new\nline', folder, '--opt')


def test_a_link_where_a_folder_is_written_is_refused_as_a_link_to_a_folder(tmp_path):
    """A link to a folder where a command writes a folder (tiny-imagenet's val/) was said to be where a file is
    written, 'which would replace the file it links to'."""
    (tmp_path / 'elsewhere').mkdir()
    (tmp_path / 'val').symlink_to(tmp_path / 'elsewhere')
    with pytest.raises(ValueError, match=rf'^{tmp_path / "val"} is a link to {tmp_path / "elsewhere"} where timm-sl '
                                         rf'writes a thing, which would write into the folder it links to; allowed: '
                                         rf'remove the link$'):
        check_path(tmp_path / 'val', PathRule('a thing', FOLDER, writes=True, link=False))


@pytest.mark.parametrize('kind,wanted', [(FILE, 'a regular file'), (FOLDER, 'a folder'),
                                         (EITHER, 'a regular file or a folder')])
def test_a_fifo_is_refused_as_not_what_the_rule_expects(tmp_path, kind, wanted):
    """A FIFO where a folder belongs was said to be 'not a regular file': the reason named a thing not asked for."""
    with pytest.raises(ValueError, match=rf'target is a FIFO \(named pipe\), not {wanted}; expected a thing$'):
        check_path(_fifo(tmp_path / 'target'), PathRule('a thing', kind))


@pytest.mark.parametrize('rule_name', list(_RULES))
def test_check_path_passes_what_the_rule_allows(tmp_path, rule_name):
    rule = _RULES[rule_name]
    check_path(_good(tmp_path / 'target', rule), rule)
    if rule.link:  # a link to a good thing is as good
        real = _good(tmp_path / 'real', replace_writes(rule))
        (tmp_path / 'link').symlink_to(real)
        check_path(tmp_path / 'link', rule)


@pytest.mark.parametrize('rule_name', list(_RULES))
def test_a_path_the_system_cannot_look_up_is_refused_for_what_it_is(tmp_path, rule_name):
    """A link that loops on the way was 'does not exist' (or 'a link to loop, which does not exist'); a name too long
    and a folder on the way that may not be entered were the system's line, which names no option; a name too long
    below a folder not made yet passed, and the command made that folder before it failed."""
    rule = _RULES[rule_name]
    with pytest.raises(ValueError, match=re.escape(f'--opt {tmp_path}/loop/it: {tmp_path}/loop is a link that loops '
                                                   f'(loop); expected a thing')):
        check_path(_below_a_looping_link(tmp_path / 'it'), rule, '--opt')
    long = _name_too_long(tmp_path / 'it')
    with pytest.raises(OSError, match=re.escape(f'--opt {long}: file name too long; expected a thing')):
        check_path(long, rule, '--opt')
    if rule.writes and rule.kind == FOLDER:  # the system says nothing of a name below a folder not made yet
        long = _name_too_long_below_a_new_folder(tmp_path / 'it')
        with pytest.raises(OSError, match=re.escape(f'--opt {long}: file name too long (300 bytes in one name, ')
                           + r'\d+ allowed\); expected a thing'):
            check_path(long, rule, '--opt')


def test_an_empty_path_is_refused_not_taken_for_the_current_folder(tmp_path, capsys, reach):
    """'' passed the table as '.' (a run folder for --checkpoint, the folder to export into), where the command then
    took it for no path given: kld --checkpoint '' analysed no checkpoint, export '' named '.'."""
    for rule in _RULES.values():
        with pytest.raises(FileNotFoundError, match=re.escape("--opt is empty (''); expected a thing")):
            check_path('', rule, '--opt')
    (tmp_path / 'x.png').write_text('x')
    with pytest.raises(SystemExit):
        cli.main(['kld', 'x.png', '--checkpoint', ''])
    assert capsys.readouterr().err == ("timm-sl kld: --checkpoint is empty (''); expected a checkpoint file, a "
                                       "train.py run folder or an exported folder\n")


def test_a_quoted_tilde_is_refused_where_there_is_no_such_folder(tmp_path, monkeypatch):
    """A '~' the shell left as it is was 'does not exist' where read, 'folder ~ does not exist ...; create it first'
    where a file is written, and a folder named '~' made here where a folder is written; a real folder '~' is used."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    for rule in _RULES.values():
        with pytest.raises(FileNotFoundError, match=re.escape(f'--opt ~/it: there is no folder ~ here (a shell '
                                                              f'expands ~ only unquoted); allowed: '
                                                              f'{tmp_path}/home/it')):
            check_path('~/it', rule, '--opt')
    (tmp_path / '~').mkdir()
    check_path('~/it', PathRule('a thing', FOLDER, writes=True), '--opt')
    check_path('~no-such-user', PathRule('a thing', FOLDER, writes=True), '--opt')  # no user's home: a plain name
    assert sorted(p.name for p in tmp_path.iterdir()) == ['~']


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder on a read-only file system (a tmpfs mounted read-only; skipped where this user may not mount)."""
    folder = tmp_path / 'read-only'
    folder.mkdir()
    try:
        mounted = os.geteuid() == 0 and subprocess.run(['mount', '-t', 'tmpfs', '-o', 'ro', 'tmpfs', str(folder)],
                                                       capture_output=True).returncode == 0
    except OSError:  # no mount command on this machine
        mounted = False
    if not mounted:
        pytest.skip('mounting a read-only file system needs root and the mount command')
    yield folder
    subprocess.run(['umount', str(folder)], check=True)


def test_a_read_only_file_system_is_named_where_a_command_writes(read_only_folder):
    """A folder of a read-only file system was 'not writable by this user' (root may write everywhere else): the
    reason the system gives is named."""
    for rule in (PathRule('a thing', FOLDER, writes=True), PathRule('a thing', EITHER, writes=True)):
        with pytest.raises(OSError, match=re.escape(f'--opt {read_only_folder}: cannot write into it (read-only file '
                                                    f'system)')):
            check_path(read_only_folder, rule, '--opt')


def test_the_check_leaves_nothing_where_it_looks_also_when_interrupted(tmp_path, monkeypatch):
    """The file made to learn that a folder takes new files is removed: it was left there by a Ctrl-C while the
    check closed it."""
    rule = PathRule('a thing', FOLDER, writes=True)
    check_path(tmp_path / 'new' / 'deeper', rule)
    check_path(tmp_path, rule)
    assert list(tmp_path.iterdir()) == []

    def interrupted(handle):
        os_close(handle)
        raise KeyboardInterrupt
    os_close = os.close
    monkeypatch.setattr(os, 'close', interrupted)
    with pytest.raises(KeyboardInterrupt):
        check_path(tmp_path, rule)
    assert list(tmp_path.iterdir()) == []


def replace_writes(rule: PathRule) -> PathRule:
    """The rule of the real thing behind a link: it must be there, whether or not the command writes it."""
    return PathRule(rule.what, rule.kind)


def test_check_path_names_the_kind_found_and_what_was_expected(tmp_path):
    with pytest.raises(ValueError, match=r'is a FIFO \(named pipe\), not a regular file; expected a thing$'):
        check_path(_fifo(tmp_path / 'f'), PathRule('a thing'))
    with pytest.raises(IsADirectoryError, match=r'is a folder; expected a thing$'):
        check_path(tmp_path, PathRule('a thing'))
    with pytest.raises(NotADirectoryError, match=r'is a file; expected a thing$'):
        check_path(_file(tmp_path / 'g'), PathRule('a thing', FOLDER))
    with pytest.raises(NotADirectoryError, match=r'/g is a file, not a folder; cannot create a thing below it$'):
        check_path(tmp_path / 'g' / 'new' / 'chart.png', PathRule('a thing', writes=True))
    with pytest.raises(FileNotFoundError, match='folder .*/none does not exist, where a thing goes; create it first'):
        check_path(tmp_path / 'none' / 'chart.png', PathRule('a thing', writes=True))


def test_a_file_written_through_a_link_names_the_link_and_where_it_points(tmp_path):
    """A written file's link to a file in a missing folder read '--opt DIR/link.png: folder ELSEWHERE does not exist':
    the folder of the given path exists; the line did not say that the path is a link, or to what."""
    (tmp_path / 'link.png').symlink_to(tmp_path / 'missing' / 'c.png')
    with pytest.raises(FileNotFoundError) as e:
        check_path(tmp_path / 'link.png', PathRule('a thing', writes=True), '--opt')
    assert str(e.value) == (f"--opt {tmp_path / 'link.png'} (a link to {tmp_path / 'missing' / 'c.png'}): folder "
                            f"{tmp_path / 'missing'} does not exist, where a thing goes; create it first")


def test_what_a_rule_allows_follows_what_was_expected(tmp_path):
    """A rule's remedy ('move it away', 'export again') ends the line of each wrong kind that names what was expected;
    a rule without one says what it said before."""
    rule = PathRule('a thing', allowed='move it away')
    for path, kind in ((_fifo(tmp_path / 'f'), r'is a FIFO \(named pipe\), not a regular file'),
                       (tmp_path, 'is a folder'), (tmp_path / 'none', 'does not exist'),
                       (_loop(tmp_path / 'loop'), r'is a link that loops \(.*\)')):
        with pytest.raises((OSError, ValueError), match=f'{kind}; expected a thing; allowed: move it away$'):
            check_path(path, rule)
    with pytest.raises(NotADirectoryError, match=r'is a file; expected a thing; allowed: move it away$'):
        check_path(_file(tmp_path / 'g'), PathRule('a thing', FOLDER, allowed='move it away'))
    with pytest.raises(IsADirectoryError, match=r'is a folder; expected a thing$'):
        check_path(tmp_path, PathRule('a thing'))


def test_a_folder_given_for_a_file_that_holds_it_says_so(tmp_path):
    """`--train-script FOLDER` where FOLDER/train.py is there: the line names the file the user meant."""
    rule = PathRule('a script', usual_name='train.py')
    with pytest.raises(IsADirectoryError, match=r'is a folder; expected a script$'):
        check_path(tmp_path, rule)
    _file(tmp_path / 'train.py')
    with pytest.raises(IsADirectoryError, match=f'^{tmp_path} is a folder; expected a script \\({tmp_path}/train.py is '
                                                f'there\\)$'):
        check_path(tmp_path, rule)


def test_a_written_folder_may_be_created_with_its_parents(tmp_path):
    check_path(tmp_path / 'a' / 'b' / 'c', PathRule('a thing', FOLDER, writes=True))
    assert not (tmp_path / 'a').exists()  # checked, not created: the command creates it


def test_contents_are_checked_inside_a_folder_and_beside_a_file(tmp_path):
    rule = PathRule('a run', EITHER, contents={'args.yaml': PathRule('args'), 'checkpoint-*.pth.tar': PathRule('c')},
                    beside=True)
    _file(tmp_path / 'model_best.pth.tar')
    check_path(tmp_path, rule)
    _fifo(tmp_path / 'checkpoint-3.pth.tar')
    for given in (tmp_path, tmp_path / 'model_best.pth.tar'):
        with pytest.raises(ValueError, match=r'checkpoint-3.pth.tar is a FIFO .*; expected c$'):
            check_path(given, rule)


def test_a_rules_allowed_way_out_is_named_by_every_refusal_of_it_and_inside_it(tmp_path):
    """reproduce's refusals inside --out said 'or another --out' (what is there is left alone); the table's lost it."""
    rule = PathRule('an output', FOLDER, writes=True, allowed='another --out', contents={
        'a.txt': PathRule('a report', writes=True, link=False), 'runs': PathRule('runs', FOLDER)})
    _folder(tmp_path / 'out')
    _folder(tmp_path / 'out' / 'a.txt')
    with pytest.raises(IsADirectoryError, match=r'/a.txt is a folder; expected a report; allowed: another --out$'):
        check_path(tmp_path / 'out', rule)
    (tmp_path / 'out' / 'a.txt').rmdir()
    _link_to_user_file(tmp_path / 'out' / 'a.txt')
    with pytest.raises(ValueError, match=r'a.txt is a link to .*; allowed: remove the link, or another --out$'):
        check_path(tmp_path / 'out', rule)
    (tmp_path / 'out' / 'a.txt').unlink()
    _dangling(tmp_path / 'out' / 'runs')
    with pytest.raises(FileNotFoundError, match=r'/runs is a link to .*\(allowed: .*, or none, or another --out\)$'):
        check_path(tmp_path / 'out', rule)
    with pytest.raises(NotADirectoryError, match=r'/g is a file; expected an output; allowed: another --out$'):
        check_path(_file(tmp_path / 'g'), rule)
    with pytest.raises(OSError, match=r'/proc/x: .*allowed: a place this user may write \(not /proc, /sys\), or '
                                      r'another --out$'):
        check_path('/proc/x', rule)


def test_reproduce_checks_its_run_folders_not_what_else_its_runs_folder_holds(tmp_path):
    """A file of the user's (or a test's) in OUT/runs was refused as 'a file; expected a run folder'."""
    rule = COMMAND_PATHS['reproduce']['out']
    _folder(tmp_path / 'runs')
    _file(tmp_path / 'runs' / 'notes.txt')
    check_path(tmp_path, rule)
    _file(tmp_path / 'runs' / 'vit-sl-s0')
    with pytest.raises(NotADirectoryError,
                       match=r'/vit-sl-s0 is a file; expected a run folder; allowed: another --out$'):
        check_path(tmp_path, rule)


# ---- the table, command by command ----------------------------------------------------------------------------------

# each command's required arguments; '{dest}' is replaced by the path under test or a good one
_BASE: Dict[str, List[str]] = {
    'export': ['{checkpoint}', '--out', '{out}'], 'reproduce': ['--data-dir', '{data_dir}', '--dataset', 'cifar10'],
    'release': ['{runs}', '--org', 'me'], 'push': ['{folder}', '--repo-id', 'me/models'],
    'kld': ['{images}'], 'attention': ['{images}'], 'prepare-tiny-imagenet': ['{root}'], 'prepare-svhn': ['{root}'],
    'prepare-fashion-mnist': ['{root}'],
}


def _argv(command: str, values: Dict[str, Path]) -> List[str]:
    """``command``'s argument list with ``values`` (dest -> path) for the table's paths, good ones for the rest."""
    options = {a.dest: a.option_strings[-1] for a in cli.build_parser().commands[command]._actions
               if a.option_strings}
    argv = [command]
    base = _BASE.get(command, [])
    for word in base:
        argv.append(str(values[word[1:-1]]) if word.startswith('{') else word)
    for dest, path in values.items():
        if '{' + dest + '}' not in base:
            argv += [options[dest], str(path)]
    return argv


def _values(tmp_path: Path, command: str, dest: str, path: Path) -> Dict[str, Path]:
    values = {}
    for other, rule in COMMAND_PATHS[command].items():
        if other == dest:
            values[other] = path
        elif other == 'compare_checkpoint' or (other == 'checkpoint' and dest == 'compare_checkpoint'):
            continue  # one source of a model at a time where argparse makes them exclusive
        elif '{' + other + '}' in _BASE.get(command, []):
            folder = tmp_path / f'good-{other}'
            folder.mkdir()
            values[other] = _good(folder / _name(rule), rule)
    return values


_TABLE_CASES: List[Tuple[str, str, str]] = [
    (command, dest, kind) for command, paths in COMMAND_PATHS.items() for dest, rule in paths.items()
    for kind in hostile_kinds(rule)]


@pytest.mark.parametrize('command,dest,kind', _TABLE_CASES, ids=['-'.join(c) for c in _TABLE_CASES])
def test_every_path_of_every_command_refuses_each_wrong_kind_first(tmp_path, capsys, reach, command, dest, kind):
    rule = COMMAND_PATHS[command][dest]
    place = tmp_path / 'place'
    place.mkdir()
    path = hostile_kinds(rule)[kind](place / _name(rule))
    with pytest.raises(SystemExit) as e:  # CommandFailed, or argparse's error where an option's type checks it
        cli.main(_argv(command, _values(tmp_path, command, dest, path)))
    assert e.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'timm-sl {command}: ') and str(path) in lines[0], lines


_GOOD_CASES = [(command, dest) for command, paths in COMMAND_PATHS.items() for dest in paths]


@pytest.mark.parametrize('command,dest', _GOOD_CASES, ids=['-'.join(c) for c in _GOOD_CASES])
def test_every_path_of_every_command_passes_a_good_thing(tmp_path, reach, command, dest):
    place = tmp_path / 'place'
    place.mkdir()
    path = _good(place / _name(COMMAND_PATHS[command][dest]), COMMAND_PATHS[command][dest])
    with pytest.raises(_Reached):
        cli.main(_argv(command, _values(tmp_path, command, dest, path)))


def _inner_cases():
    """(command, dest, path inside, rule) of every file a folder rule names inside it, one level or more down."""
    def walk(rule: PathRule, prefix: str):
        for pattern, inner in (rule.contents or {}).items():
            name = prefix + re.sub(r'\[(.)[^]]*]', r'\1', pattern.replace('**/', '').replace('*', 'x'))
            yield name, inner
            yield from walk(inner, name + '/')
    return [(command, dest, name, inner) for command, paths in COMMAND_PATHS.items()
            for dest, rule in paths.items() for name, inner in walk(rule, '')]


_INNER = _inner_cases()


@pytest.mark.parametrize('command,dest,name,inner', _INNER, ids=[f'{c}-{d}-{n}' for c, d, n, _ in _INNER])
def test_every_file_inside_a_commands_folder_refuses_a_fifo_and_a_link_to_nothing(tmp_path, capsys, reach, command,
                                                                                   dest, name, inner):
    for make in (_fifo, _dangling):
        folder = tmp_path / make.__name__
        folder.mkdir()
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        make(path)
        given = folder if COMMAND_PATHS[command][dest].kind != FILE else _file(folder / 'given.pth.tar')
        with pytest.raises(cli.CommandFailed):
            cli.main(_argv(command, _values(tmp_path / make.__name__, command, dest, given)))
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and str(path) in lines[0], lines
        assert inner.what in lines[0] or not inner.link and 'remove the link' in lines[0], lines


@pytest.mark.parametrize('command', ['kld', 'attention'])
@pytest.mark.parametrize('name', ['sub/deeper/x.png', 'x.Png', 'x.JPEG', '.hidden.jpg'])
def test_every_image_a_folder_gives_is_checked_first(tmp_path, capsys, reach, command, name):
    """kld / attention read every image under a folder (any depth, hidden names, '.Png'): the table looked only at the
    top level and at .png / .PNG, so a FIFO at images/sub/x.png or images/x.Png was found after the model was built."""
    fifo = tmp_path / 'images' / name
    fifo.parent.mkdir(parents=True)
    _fifo(fifo)
    with pytest.raises(cli.CommandFailed):
        cli.main([command, str(tmp_path / 'images')])
    assert capsys.readouterr().err == (f'timm-sl {command}: {fifo} is a FIFO (named pipe), not a regular file; '
                                       f'expected an image file\n')


# the arguments that take text but name no file or folder (a name, a pattern, words passed on to train.py)
_NOT_PATHS = ('filter', 'model', 'model_kwargs', 'dataset', 'families', 'gpus', 'train_args', 'org', 'name_pattern',
              'repo_id', 'revision')


def test_every_text_argument_of_every_command_is_a_path_in_the_table_or_named_as_none():
    """A new option that takes a path is caught here, not by a user: it must be in COMMAND_PATHS or said to be no
    path (numbers, switches and choices are none)."""
    for command, parser in cli.build_parser().commands.items():
        paths = COMMAND_PATHS.get(command, {})
        for action in parser._actions:
            if action.nargs == 0 or action.choices or action.type not in (None, str, cli.figure_path):
                continue
            assert (action.dest in paths) != (action.dest in _NOT_PATHS), f'{command} {action.dest}'
        for dest in paths:
            assert any(a.dest == dest for a in parser._actions), f'{command} {dest}: no such argument'


@pytest.mark.parametrize('command,split', [('prepare-fashion-mnist', 'train'), ('prepare-svhn', 'extra'),
                                           ('prepare-fashion-mnist', '.test.prepare-fashion-mnist')])
def test_a_fifo_where_a_prepare_command_writes_a_split_folder_is_refused_first(tmp_path, capsys, reach, command,
                                                                               split):
    """The split folders (and their hidden staging folders) are replaced whole: removing a FIFO there opens it, so
    prepare-fashion-mnist waited forever after writing every image."""
    fifo = _fifo(tmp_path / split)
    with pytest.raises(cli.CommandFailed):
        cli.main([command, str(tmp_path)])
    assert capsys.readouterr().err.startswith(f'timm-sl {command}: {fifo} is a FIFO (named pipe)')


_NUMBERS = COMMAND_PATHS['attention']['out'].suffixes['.json']
_NUMBERS_KINDS = [k for k in hostile_kinds(_NUMBERS) if k not in (  # the chart's own: its name gives the numbers'
    'below_a_file', 'below_a_looping_link', 'unwritable', 'name_too_long', 'name_too_long_below_a_new_folder',
    'empty')]


@pytest.mark.parametrize('kind', _NUMBERS_KINDS)
def test_what_attention_writes_beside_its_chart_is_checked_first(tmp_path, capsys, reach, kind):
    """attention writes its numbers to --out with .json: a link to nothing there (or one that loops) was found after
    the model ran and the chart was drawn, as 'no such file or directory'."""
    numbers = hostile_kinds(_NUMBERS)[kind](tmp_path / 'chart.json')
    with pytest.raises(cli.CommandFailed):
        cli.main(['attention', str(tmp_path), '--out', str(tmp_path / 'chart.png')])
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and str(numbers) in lines[0] and "attention's numbers" in lines[0], lines


@pytest.mark.parametrize('kind', ['fifo', 'folder', 'link_to_a_users_file', 'looping_link'])
@pytest.mark.parametrize('inside', [False, True])
def test_the_file_a_written_file_is_first_written_to_is_checked_too(tmp_path, capsys, reach, kind, inside):
    """A file is written beside its place first (errors.partial_of), then moved over: a link there had the file it
    names replaced (and the link moved to the chart's place), a folder there failed after the work."""
    make = dict(fifo=_fifo, folder=_folder, link_to_a_users_file=_link_to_user_file, looping_link=_loop)[kind]
    if inside:  # a report file reproduce writes in its --out, not there yet
        partial, argv = tmp_path / '.report.md.partial.md', ['reproduce', '--data-dir', str(tmp_path), '--dataset',
                                                             'cifar10', '--out', str(tmp_path)]
    else:
        partial, argv = tmp_path / '.chart.png.partial.png', ['temperature', '--out', str(tmp_path / 'chart.png')]
    make(partial)
    with pytest.raises(SystemExit):
        cli.main(argv)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and str(partial) in lines[-1], lines
    if kind == 'link_to_a_users_file':
        assert (tmp_path / 'users-own-file').read_text() == 'keep me'


def test_a_file_written_again_keeps_the_mode_its_owner_gave_it(tmp_path):
    """reproduce's results.json / report.md / sessions.json are written beside and moved over: a results.json the
    user made private (``chmod 600``) came back readable by all."""
    from timm_sl.tools.errors import write_atomically
    path = tmp_path / 'results.json'
    path.write_text('{}')
    path.chmod(0o600)
    write_atomically(path, lambda f: f.write_text('{"runs": []}'))
    assert path.read_text() == '{"runs": []}' and (path.stat().st_mode & 0o777) == 0o600
    write_atomically(tmp_path / 'new.json', lambda f: f.write_text('{}'))  # a new file: the process's default mode
    assert (tmp_path / 'new.json').stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_held_folder_refuses_a_second_holder_in_the_callers_words_and_is_free_after(tmp_path):
    """export, release and the prepare-* commands hold their output folder with one lock: a second writer gets the
    caller's one line, and the folder is free again once the block ends, however it ends."""
    pytest.importorskip('fcntl')
    from timm_sl.tools.errors import held_folder
    with held_folder(tmp_path, 'first'):
        with pytest.raises(BlockingIOError) as info:
            with held_folder(tmp_path, f'{tmp_path} is being written by another command; allowed: wait for it'):
                pass
        assert str(info.value) == f'{tmp_path} is being written by another command; allowed: wait for it'
    with pytest.raises(RuntimeError):
        with held_folder(tmp_path, 'second'):
            raise RuntimeError('a write that failed')
    with held_folder(tmp_path, 'third'):
        assert list(tmp_path.iterdir()) == []  # the lock adds no file


def _text_io_without_encoding(node) -> bool:
    """A call that reads or writes a file as text in the locale's encoding: ``Path.read_text`` / ``write_text``,
    ``open`` / ``os.fdopen`` / ``Path.open`` in a text mode, none given ``encoding=``."""
    import ast
    if not isinstance(node, ast.Call) or any(k.arg == 'encoding' for k in node.keywords):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ('read_text', 'write_text'):
        return True
    owner = getattr(func.value, 'id', None) if isinstance(func, ast.Attribute) else None
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', '')
    if name == 'fdopen' or name == 'open' and (isinstance(func, ast.Name) or owner == 'io'):  # open(path, mode)
        positional = node.args[1:2]
    elif name == 'open' and owner not in ('Image', 'os', 'gzip', 'tarfile', 'zipfile'):  # Path.open(mode): the
        positional = node.args[:1]  # others open bytes (or a descriptor) by default
    else:
        return False
    mode = next((k.value for k in node.keywords if k.arg == 'mode'), positional[0] if positional else None)
    return 'b' not in (mode.value if isinstance(mode, ast.Constant) else 'r')


def test_every_text_file_is_read_and_written_as_utf_8():
    """A text read or write without an encoding takes the locale's: under a Latin-1 locale, report.md's '−' could
    not be written, nor a data folder's non-ASCII path into command.txt. Every one names UTF-8 (files.read_text, the
    package's reader of what runs leave, takes byte-order marks and other encodings as they come)."""
    import ast
    root = Path(__file__).resolve().parents[1]
    missing = [f'{path.relative_to(root)}:{node.lineno}'
               for path in sorted([*(root / 'timm_sl').rglob('*.py'), *(root / 'benchmarks').glob('*.py')])
               for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))) if _text_io_without_encoding(node)]
    assert not missing, missing


def _refuse_listing(monkeypatch, locked: Path) -> None:
    """What the system does to a folder of mode 700 owned by another user (root reads it)."""
    scandir = os.scandir

    def refuse(path='.'):
        if not isinstance(path, int) and Path(path) == locked:
            raise PermissionError(13, 'Permission denied', str(path))
        return scandir(path)
    monkeypatch.setattr(os, 'scandir', refuse)


def test_release_passes_a_folder_it_cannot_read_while_kld_refuses_it_naming_the_folder(tmp_path, monkeypatch):
    """A disk's lost+found (root's, mode 700) beside the runs stopped `timm-sl release` at the path check with
    'lost+found/args.yaml: permission denied', a file that is not there, though release passes such a folder and says
    so; an image folder's unreadable class folder was refused as 'sub: permission denied', no more said."""
    runs = tmp_path / 'runs'
    (runs / 'vit-sl-s0').mkdir(parents=True)
    (runs / 'vit-sl-s0' / 'args.yaml').write_text('model: sl_vit_32\n')
    locked = runs / 'lost+found'
    locked.mkdir()
    _refuse_listing(monkeypatch, locked)
    check_path(runs, COMMAND_PATHS['release']['runs'])
    images = tmp_path / 'images'
    (images / 'sub').mkdir(parents=True)
    _refuse_listing(monkeypatch, images / 'sub')
    with pytest.raises(PermissionError) as info:
        check_path(images, COMMAND_PATHS['kld']['images'])
    assert str(info.value) == (f'{images / "sub"}: cannot read this folder (permission denied), so what it holds would '
                               f'be left out; allowed: a folder this user may read and enter, or move it away')


@pytest.mark.skipif(os.geteuid() == 0, reason='root reads and enters every folder')
@pytest.mark.parametrize('mode', [0o000, 0o100, 0o600])
def test_a_folder_this_user_may_not_read_or_enter_is_named_as_the_user_meets_it(tmp_path, capsys, reach, mode):
    """As a user: a lost+found of no read or enter permission beside the runs, passed by release; the same folder of
    images refused by kld naming the folder (a folder that may be listed, not entered: not its image's name)."""
    runs = tmp_path / 'runs'
    (runs / 'vit-sl-s0').mkdir(parents=True)
    (runs / 'vit-sl-s0' / 'args.yaml').write_text('model: sl_vit_32\n')
    (runs / 'lost+found' / 'a').mkdir(parents=True)
    (runs / 'lost+found' / 'args.yaml').write_text('model: sl_vit_32\n')
    (runs / 'lost+found').chmod(mode)
    try:
        with pytest.raises(_Reached):
            cli.main(['release', str(runs), '--org', 'o', '--out', str(tmp_path / 'rel')])
        with pytest.raises(SystemExit):
            cli.main(['kld', str(runs), '--out', str(tmp_path / 'kld.png')])
    finally:
        (runs / 'lost+found').chmod(0o700)
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and f'{runs / "lost+found"}' in err and 'args.yaml' not in err, err


def test_another_users_file_in_a_sticky_folder_is_refused_where_a_command_writes(tmp_path, monkeypatch):
    """A chart named as another user's file in /tmp (mode 666: writable) was drawn, then 'operation not permitted'
    when moved over it, no more said; a writable partial file of another user's was written into first."""
    sticky = tmp_path / 'tmp'
    sticky.mkdir()
    sticky.chmod(0o1777)
    theirs = sticky / 'chart.png'
    theirs.write_text('theirs')
    theirs.chmod(0o666)
    other = theirs.stat().st_uid + 1
    monkeypatch.setattr(os, 'geteuid', lambda: other)  # this user owns neither the file nor the folder
    rule = COMMAND_PATHS['temperature']['out']
    with pytest.raises(PermissionError) as info:
        check_path(theirs, rule, '--out')
    assert str(info.value) == (f"--out {theirs} is another user's file in a sticky folder (as /tmp), which only its "
                               f"owner may replace or remove; expected a chart file")
    theirs.rename(sticky / '.mine.png.partial.png')
    with pytest.raises(PermissionError, match="partial.png is another user's file in a sticky folder"):
        check_path(sticky / 'mine.png', rule, '--out')
    (sticky / '.mine.png.partial.png').rename(theirs)
    link = tmp_path / 'mine.png'  # this user's link, where a chart may be written through: the file it names is
    link.symlink_to(theirs)  # replaced, in the sticky folder (the link's own folder was asked: it passed)
    with pytest.raises(PermissionError) as info:
        check_path(link, rule, '--out')
    assert str(info.value) == (f"--out {link} is a link to {theirs}, another user's file in a sticky folder (as /tmp), "
                               f"which only its owner may replace or remove; expected a chart file")
    monkeypatch.setattr(os, 'geteuid', lambda: sticky.stat().st_uid)
    check_path(sticky / 'mine.png', rule, '--out')  # the folder's owner may
    check_path(link, rule, '--out')


@pytest.mark.parametrize('record', ['fashion_mnist.json', 'svhn.json'])
def test_reproduce_refuses_a_prepare_record_it_cannot_read(tmp_path, capsys, reach, monkeypatch, record):
    """The record of a prepare-* in reproduce's --data-dir unreadable by this user (chmod 000, another user's mode
    600): the runs were started as on a folder of '? train, ? test images', and with it readable again a rerun called
    them 'trained with other settings', a false reason."""
    data = tmp_path / 'data'
    data.mkdir()
    (data / record).write_text('{}')
    access = os.access
    monkeypatch.setattr(os, 'access', lambda path, mode, **kw: Path(path) != data / record and access(path, mode, **kw))
    with pytest.raises(SystemExit):
        cli.main(['reproduce', '--data-dir', str(data), '--dataset', 'svhn', '--out', str(tmp_path / 'out')])
    dataset = record.split('.')[0].replace('_', '-')
    assert capsys.readouterr().err == (f'timm-sl reproduce: {data / record} is not readable by this user; expected the '
                                       f'record of timm-sl prepare-{dataset}, which says what the folder holds\n')

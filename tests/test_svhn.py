"""``timm-sl prepare-svhn``: SVHN's .mat files (generated small here) -> train/ and test/ digit folders that timm's
dataset reader and ``timm-sl reproduce --dataset svhn`` take; errors, refusals and overwrite."""
import contextlib
import json
import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest

from timm_sl.tools.cli import main
from timm_sl.tools import prepare_svhn, read_svhn_mat

scipy_io = pytest.importorskip('scipy.io')
from PIL import Image  # noqa: E402

SIZES = {'train': 30, 'test': 12, 'extra': 11}  # every digit in each split (one missing is refused)
FILES = {'train': 'train_32x32.mat', 'test': 'test_32x32.mat', 'extra': 'extra_32x32.mat'}


def _write_mat(path: Path, n: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """An SVHN-format file: X (32, 32, 3, n) uint8, y (n, 1) uint8 in 1..10, every label present when n >= 10."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8)
    y = (np.arange(n) % 10 + 1).astype(np.uint8)
    rng.shuffle(y)
    scipy_io.savemat(str(path), {'X': x, 'y': y[:, None]})
    return x, y


@pytest.fixture
def mats(tmp_path) -> Tuple[Path, Dict[str, Tuple[np.ndarray, np.ndarray]]]:
    source = tmp_path / 'mats'
    source.mkdir()
    return source, {split: _write_mat(source / FILES[split], n, seed) for seed, (split, n) in enumerate(SIZES.items())}


def _layout(root: Path) -> Dict[str, List[str]]:
    return {split.name: sorted(d.name for d in split.iterdir()) for split in sorted(root.iterdir()) if split.is_dir()}


def _cli_error(argv: List[str], capsys) -> str:
    """The one line a failing command ends with (the CLI's convention: exit status 2, one line on stderr)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    message = str(info.value)
    assert '\n' not in message and capsys.readouterr().err.strip().splitlines()[-1] == message
    return message


def test_images_and_labels_round_trip(mats, tmp_path):
    source, data = mats
    out = tmp_path / 'svhn'
    counts = prepare_svhn(out, source=source, progress=False)['counts']
    assert _layout(out) == {'test': [str(d) for d in range(10)], 'train': [str(d) for d in range(10)]}
    for split in ('train', 'test'):
        x, y = data[split]
        digits = y % 10  # label 10 is the digit 0
        assert counts[split] == {str(d): int((digits == d).sum()) for d in range(10)}
        for i in range(len(y)):
            image = np.asarray(Image.open(out / split / str(digits[i]) / f'{i:06d}.png'))
            np.testing.assert_array_equal(image, x[:, :, :, i])
        assert sum(1 for _ in (out / split).rglob('*.png')) == len(y)
    assert not (out / 'extra').exists()  # present in the source, but not asked for
    assert [p.name for p in out.iterdir() if p.name.startswith('.')] == []  # no staging folder left


def test_folders_match_torchvision_and_timm_readers(mats, tmp_path, monkeypatch):
    """Every image torchvision's SVHN dataset yields with target t is in folder t; timm reads the splits the recipe
    names with class index = digit."""
    import timm.data
    import yaml
    from torchvision.datasets import SVHN
    source, data = mats
    out = tmp_path / 'svhn'
    prepare_svhn(out, source=source, progress=False)
    monkeypatch.setattr(SVHN, '_check_integrity', lambda self: True)  # the generated files have no official md5
    reference = SVHN(str(source), split='test')
    for i in range(len(reference)):
        image, target = reference[i]
        np.testing.assert_array_equal(np.asarray(Image.open(out / 'test' / str(target) / f'{i:06d}.png')),
                                      np.asarray(image))
    recipe = yaml.safe_load((Path(__file__).parents[1] / 'recipes' / 'svhn.yaml').read_text())
    for split, n in ((recipe['train_split'], SIZES['train']), (recipe['val_split'], SIZES['test'])):
        dataset = timm.data.create_dataset('', root=str(out), split=split)
        assert len(dataset) == n
        assert dataset.reader.class_to_idx == {str(d): d for d in range(recipe['num_classes'])}
        for index in range(n):
            path, target = dataset.reader.samples[index]
            assert Path(path).parent.name == str(target)


def test_extra_split_on_request(mats, tmp_path):
    source, data = mats
    out = tmp_path / 'svhn'
    counts = prepare_svhn(out, source=source, extra=True, progress=False)['counts']
    assert sorted(counts) == ['extra', 'test', 'train'] and sum(counts['extra'].values()) == SIZES['extra']
    assert sum(1 for _ in (out / 'extra').rglob('*.png')) == SIZES['extra']
    (source / FILES['extra']).unlink()
    with pytest.raises(FileNotFoundError, match='extra_32x32.mat not found'):
        prepare_svhn(tmp_path / 'other', source=source, extra=True, progress=False)
    assert not (tmp_path / 'other').exists()


def test_source_defaults_to_the_output_folder(mats, tmp_path, capsys):
    """torchvision's root can be the output: the .mat files stay, train/ and test/ appear beside them."""
    source, _ = mats
    assert main(['prepare-svhn', str(source)]) == 0
    assert f'30 train, 12 test images in digit folders 0-9 under {source}/{{train,test}}' in capsys.readouterr().out
    assert sorted(p.name for p in source.iterdir()) == ['extra_32x32.mat', 'svhn.json', 'test', 'test_32x32.mat',
                                                         'train', 'train_32x32.mat']


def _stamps(root: Path) -> Dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in root.rglob('*')}


def test_a_rerun_writes_only_what_is_not_there(mats, tmp_path, capsys):
    """As prepare-fashion-mnist: a second run over its own finished output writes nothing and exits 0 (it used to
    refuse); a split folder deleted since is written again, alone; asked for extra later, extra alone is written."""
    source, _ = mats
    out = tmp_path / 'svhn'
    assert main(['prepare-svhn', str(out), '--source', str(source)]) == 0
    capsys.readouterr()
    stamps = _stamps(out)
    assert main(['prepare-svhn', str(out), '--source', str(source)]) == 0
    assert capsys.readouterr().out == (f'30 train, 12 test images in digit folders 0-9 under {out}/{{train,test}} '
                                       f'(already there: nothing written)\n')
    assert _stamps(out) == stamps
    shutil.rmtree(out / 'test')
    assert main(['prepare-svhn', str(out), '--source', str(source)]) == 0
    assert capsys.readouterr().out.endswith(f'under {out}/{{train,test}} (test written; train already there)\n')
    assert sum(1 for _ in (out / 'test').rglob('*.png')) == SIZES['test']
    assert {p: t for p, t in _stamps(out).items() if 'train' in p.parts} == {
        p: t for p, t in stamps.items() if 'train' in p.parts}
    assert main(['prepare-svhn', str(out), '--source', str(source), '--extra']) == 0
    assert capsys.readouterr().out.endswith('(extra written; train, test already there)\n')
    assert main(['prepare-svhn', str(out), '--source', str(source)]) == 0  # extra/ stays, listed in svhn.json
    assert json.loads((out / 'svhn.json').read_text())['counts']['extra'] == prepare_svhn(
        out, source=source, extra=True, progress=False)['counts']['extra']


def test_refuses_a_filled_output_unless_asked(mats, tmp_path, capsys):
    source, data = mats
    out = tmp_path / 'svhn'
    prepare_svhn(out, source=source, progress=False)
    before = _layout(out)
    _write_mat(source / FILES['train'], 20, seed=7)  # a new train file: only --overwrite replaces the old images
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-svhn: {out / "train"} is not empty; refusing to write into it (--overwrite replaces it)')
    (out / 'svhn.json').unlink()  # an output of an older timm-sl, or not finished: refused too
    _write_mat(source / FILES['train'], 30, seed=0)
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-svhn: {out / "train"} is not empty; refusing to write into it (--overwrite replaces it)')
    _write_mat(source / FILES['train'], 20, seed=7)
    assert main(['prepare-svhn', str(out), '--source', str(source), '--overwrite']) == 0
    assert sum(1 for _ in (out / 'train').rglob('*.png')) == 20 and _layout(out) == before
    (out / 'test' / 'notes.txt').write_text('mine')
    _write_mat(source / FILES['test'], 10, seed=8)  # test/ must be written again: the file in it is not replaced
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source), '--overwrite'], capsys) == (
        f'timm-sl prepare-svhn: {out / "test"} holds files other than digit folders of PNGs; move it away first')
    assert (out / 'test' / 'notes.txt').read_text() == 'mine'
    (out / 'test' / 'notes.txt').unlink()  # a PNG of the user's in a digit folder: kept by --overwrite too
    mine = out / 'test' / '1' / 'mine.png'
    mine.write_bytes(next((out / 'train').rglob('*.png')).read_bytes())
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source), '--overwrite'], capsys) == (
        f'timm-sl prepare-svhn: {out / "test"} holds files other than digit folders of PNGs; move it away first')
    assert mine.is_file()


@pytest.mark.parametrize('overwrite', [[], ['--overwrite']])
def test_a_linked_split_folder_is_refused_and_nothing_is_lost(mats, tmp_path, capsys, overwrite):
    """train/ a link to a folder elsewhere: without --overwrite "not empty (--overwrite replaces it)", with it
    "sv/.train.prepare-svhn: not a directory (-> sv/train)", after svhn.json had been deleted."""
    source, _ = mats
    out = tmp_path / 'svhn'
    prepare_svhn(out, source=source, progress=False)
    (out / 'train').rename(tmp_path / 'elsewhere')
    (out / 'train').symlink_to(tmp_path / 'elsewhere')
    assert main(['prepare-svhn', str(out), '--source', str(source)]) == 0  # finished: the link is read as it is
    info = (out / 'svhn.json').read_text()
    _write_mat(source / FILES['train'], 20, seed=7)  # train/ to be written again
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source), *overwrite], capsys) == (
        f'timm-sl prepare-svhn: {out / "train"} is a link (to {tmp_path / "elsewhere"}); the split folder is written '
        f'whole in its place; allowed: a real folder or none there (remove the link)')
    assert (out / 'svhn.json').read_text() == info and (out / 'train').is_symlink()
    assert sorted(p.name for p in out.iterdir()) == ['svhn.json', 'test', 'train']  # no hidden folder left


def test_a_bad_file_leaves_the_output_untouched(mats, tmp_path):
    source, _ = mats
    (source / FILES['test']).write_bytes(b'not a MATLAB file at all' * 10)
    out = tmp_path / 'svhn'
    with pytest.raises(ValueError, match=r'test_32x32.mat is not a readable MATLAB file \(.*\); expected'):
        prepare_svhn(out, source=source, progress=False)
    assert list(out.iterdir()) == []  # train/ was written to a staging folder only, then removed


@pytest.mark.parametrize('arrays, message', [
    ({'X': np.zeros((32, 32, 3, 2), np.uint8)}, r" holds 'X' but no 'y'; expected 'X' uint8 of shape \(32, 32, 3, N\)"),
    # one unexpected array: named, with what is expected (it used to read 'holds no arrays')
    ({'images': np.zeros((32, 32, 3, 2), np.uint8)}, r" holds 'images' but no 'X' or 'y'; expected 'X' uint8 of "),
    ({}, r" holds no arrays but no 'X' or 'y'; expected 'X' uint8 of "),
    ({'X': np.zeros((3, 32, 32, 2), np.uint8), 'y': np.ones((2, 1))}, r": 'X' is uint8 of shape \(3, 32, 32, 2\)"),
    ({'X': np.zeros((32, 32, 3, 2)), 'y': np.ones((2, 1))}, r": 'X' is float64 of shape"),
    ({'X': np.zeros((32, 32, 3, 2), np.uint8), 'y': np.ones((3, 1))}, r": 'y' has shape \(3, 1\) for 2 images"),
    ({'X': np.zeros((32, 32, 3, 2), np.uint8), 'y': np.array([[10], [0]], np.uint8)},
     r': label 0 of image 1; expected .* labels 1\.\.10 \(10 is the digit 0\)'),
])
def test_malformed_mat_is_named(tmp_path, arrays, message):
    import re
    path = tmp_path / 'train_32x32.mat'
    scipy_io.savemat(str(path), arrays)
    with pytest.raises(ValueError, match=f'^{re.escape(str(path))}{message}'):
        read_svhn_mat(path)


@pytest.mark.parametrize('y, said', [
    (np.array([[str(d)] for d in range(1, 11)]), r"<U2 \(text\)"),  # was numpy's 'ufunc less did not contain a loop'
    (np.arange(1, 11).astype(object)[:, None], r"object \(a cell array\)"),  # a traceback ('no callable rint')
    (np.arange(1, 11).astype(complex)[:, None], r"complex128 \(complex numbers\)"),  # a ComplexWarning, exit 0
    ('sparse', r"a csc_matrix"),  # 'shape must have length in (2,)...', naming no file
])
def test_labels_that_are_not_an_array_of_numbers_are_named_in_one_line(tmp_path, capsys, y, said):
    """A 'y' of text, a cell array, complex numbers or a sparse matrix: a traceback, numpy's own line naming no
    file, or a warning before a 0 exit. Each is now refused by the file's name."""
    import re
    import scipy.sparse
    source = tmp_path / 'mats'
    source.mkdir()
    x = np.zeros((32, 32, 3, 10), np.uint8)
    labels = scipy.sparse.csc_matrix(np.arange(1, 11, dtype=float)[:, None]) if isinstance(y, str) else y
    scipy_io.savemat(str(source / FILES['train']), {'X': x, 'y': labels})
    _write_mat(source / FILES['test'], 10, 1)
    message = _cli_error(['prepare-svhn', str(tmp_path / 'out'), '--source', str(source)], capsys)
    assert re.fullmatch(f"timm-sl prepare-svhn: {re.escape(str(source / FILES['train']))}: 'y' is {said}, not an array "
                        f"of numbers; expected 'X' uint8 .*", message), message
    assert not (tmp_path / 'out' / 'train').exists()


@pytest.mark.parametrize('how', ['copy', 'link'])
def test_one_file_under_both_split_names_is_refused(mats, tmp_path, capsys, how):
    """test_32x32.mat a copy of (or link to) train_32x32.mat: the test split was the training images, silently."""
    source, _ = mats
    (source / FILES['test']).unlink()
    if how == 'copy':
        (source / FILES['test']).write_bytes((source / FILES['train']).read_bytes())
    else:
        (source / FILES['test']).symlink_to(source / FILES['train'])
    out = tmp_path / 'out'
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys) == (
        f"timm-sl prepare-svhn: {source / FILES['train']} and {source / FILES['test']} hold the same bytes: the train "
        f"and test splits would be the same images (train.py would evaluate on images it trains on); allowed: the "
        f"files of each split as released")
    assert not out.exists()


def test_swapped_split_files_are_refused(mats, tmp_path, capsys):
    """train_32x32.mat and test_32x32.mat under each other's names: train.py trained on the test images and evaluated
    on the training ones, silently."""
    source, _ = mats
    train, test = source / FILES['train'], source / FILES['test']
    train.rename(source / 'tmp')
    test.rename(train)
    (source / 'tmp').rename(test)
    out = tmp_path / 'out'
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys) == (
        f"timm-sl prepare-svhn: {train} holds 12 images but {test} 30: the training split would be the smaller, as "
        f"with the train and test files under each other's names; allowed: the files as released (train 73,257, test "
        f"26,032 images)")
    assert not out.exists()


def test_a_source_file_replaced_with_the_same_size_and_time_is_another_file(mats, tmp_path, capsys):
    """svhn.json identified a .mat file by path, size and time: another of the same size and time (as an archive
    extracts it) was taken for the one written, and the folder said 'already there' with the old images."""
    source, _ = mats
    out = tmp_path / 'svhn'
    assert main(['prepare-svhn', str(out), '--source', str(source)]) == 0
    train = source / FILES['train']
    stat = train.stat()
    _write_mat(train, SIZES['train'], seed=9)
    os.utime(train, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert train.stat().st_size == stat.st_size
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-svhn: {out / "train"} is not empty; refusing to write into it (--overwrite replaces it)')
    info = json.loads((out / 'svhn.json').read_text())  # a record of an older version: no sha256
    for split in info['sources'].values():
        split['mtime_ns'] = split.pop('sha256') and 1
    (out / 'svhn.json').write_text(json.dumps(info))
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-svhn: {out / "train"} was written by an older prepare-svhn, whose svhn.json does not say '
        f'what its source files held (their sha256); --overwrite writes it again')
    assert main(['prepare-svhn', str(out), '--source', str(source), '--overwrite']) == 0
    assert main(['prepare-svhn', str(out), '--source', str(source)]) == 0
    assert 'already there: nothing written' in capsys.readouterr().out


def test_missing_file_and_missing_scipy_are_one_line(tmp_path, capsys, monkeypatch):
    message = _cli_error(['prepare-svhn', str(tmp_path / 'out'), '--source', str(tmp_path)], capsys)
    assert message == (f'timm-sl prepare-svhn: {tmp_path / "train_32x32.mat"} not found: the source must be the folder '
                       'holding train_32x32.mat, test_32x32.mat (torchvision.datasets.SVHN root)')
    _write_mat(tmp_path / FILES['train'], 2, 0)
    _write_mat(tmp_path / FILES['test'], 2, 1)
    monkeypatch.setitem(sys.modules, 'scipy.io', None)  # import scipy.io now raises ImportError
    assert _cli_error(['prepare-svhn', str(tmp_path / 'out'), '--source', str(tmp_path)], capsys) == (
        "timm-sl prepare-svhn: reading SVHN's .mat files needs scipy; install it: pip install scipy")


# A stand-in for timm's train.py that reads the data folder as train.py would (timm's dataset factory, the splits and
# class count of the --config recipe) and records what it found; summary.csv as train.py writes it.
READING_TRAIN = textwrap.dedent('''
    import argparse, json
    from pathlib import Path
    import yaml
    from timm.data import create_dataset
    p = argparse.ArgumentParser()
    for flag in ('--data-dir', '--config', '--model', '--lr', '--seed', '--output', '--experiment', '--epochs'):
        p.add_argument(flag)
    p.add_argument('--model-kwargs', nargs='*', default=[])
    known = p.parse_known_args()[0]
    for key in yaml.safe_load(Path(known.config).read_text()):  # the recipe's other keys, as train.py has them
        if not hasattr(known, key):
            p.add_argument('--' + key.replace('_', '-'))
    a = p.parse_args()
    cfg = yaml.safe_load(Path(a.config).read_text())
    found = {}
    for key in ('train_split', 'val_split'):
        ds = create_dataset('', root=a.data_dir, split=cfg[key])
        assert len(ds.reader.class_to_idx) == cfg['num_classes'], ds.reader.class_to_idx
        found[cfg[key]] = len(ds)
    out = Path(a.output) / a.experiment
    out.mkdir(parents=True, exist_ok=True)
    (out / 'data.json').write_text(json.dumps(found))
    with open(out / 'summary.csv', 'w') as f:
        f.write('epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\\n0,1.0,1.0,50.0,90.0,0.001\\n')
''')


def test_reproduce_svhn_reads_the_prepared_folder(mats, tmp_path, capsys):
    source, _ = mats
    data = tmp_path / 'svhn'
    assert main(['prepare-svhn', str(data), '--source', str(source)]) == 0
    script = tmp_path / 'train.py'
    script.write_text(READING_TRAIN)
    out = tmp_path / 'out'
    assert main(['reproduce', '--data-dir', str(data), '--dataset', 'svhn', '--families', 'vit', '--out', str(out),
                 '--train-script', str(script), '--', '--epochs', '1', '--batch-size', '8']) == 0  # 30 images
    results = json.loads((out / 'results.json').read_text())
    assert [(r['name'], r['status']) for r in results['runs']] == [('vit-base-s0', 'done'), ('vit-sl-s0', 'done')]
    for run in results['runs']:
        assert json.loads((Path(run['dir']) / 'data.json').read_text()) == {'train': SIZES['train'],
                                                                            'test': SIZES['test']}


TIMM_REPO = os.environ.get('TIMM_REPO')


@pytest.mark.slow
@pytest.mark.skipif(not TIMM_REPO or not (Path(TIMM_REPO) / 'train.py').exists(),
                    reason="set TIMM_REPO to a folder with timm's train.py")
def test_reproduce_svhn_with_timm_train_py(mats, tmp_path):
    """timm's own train.py trains one epoch of both ViT rows with recipes/svhn.yaml on the prepared folder."""
    import subprocess
    source, _ = mats
    data = tmp_path / 'svhn'
    prepare_svhn(data, source=source, progress=False)
    out = tmp_path / 'out'
    cmd = [sys.executable, '-m', 'timm_sl.tools.cli', 'reproduce', '--data-dir', str(data), '--dataset', 'svhn',
           '--families', 'vit', '--out', str(out), '--', '--epochs', '1', '--warmup-epochs', '0', '--batch-size', '8',
           '--workers', '1', '--device', 'cpu', '--no-prefetcher']
    env = {k: v for k, v in os.environ.items() if k != 'TIMM_SL_NO_AUTOLOAD'}
    env.update(CUDA_VISIBLE_DEVICES='', OMP_NUM_THREADS='1')
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = json.loads((out / 'results.json').read_text())
    assert [r['status'] for r in results['runs']] == ['done', 'done']
    assert all(r['summary']['epochs'] == 1 for r in results['runs'])


def test_output_onto_a_file_or_an_unwritable_folder_is_one_line(mats, tmp_path, capsys, monkeypatch):
    source, _ = mats
    (tmp_path / 'a_file').write_text('mine')
    assert _cli_error(['prepare-svhn', str(tmp_path / 'a_file'), '--source', str(source)], capsys) == (
        f"timm-sl prepare-svhn: {tmp_path / 'a_file'} is a file; expected the SVHN output folder (train.py's "
        f"--data-dir)")
    assert (tmp_path / 'a_file').read_text() == 'mine'
    assert _cli_error(['prepare-svhn', str(tmp_path / 'a_file' / 'sub'), '--source', str(source)], capsys) == (
        f'timm-sl prepare-svhn: {tmp_path / "a_file" / "sub"}: {tmp_path / "a_file"} is a file, not a folder; cannot '
        f"create the SVHN output folder (train.py's --data-dir) below it")
    locked = tmp_path / 'locked'
    locked.mkdir()
    real_mkdir = Path.mkdir

    def refuse(self, *args, **kwargs):  # what a folder without write permission does (the tests may run as root)
        if self.parent == locked:
            raise PermissionError(13, 'Permission denied', str(self))
        return real_mkdir(self, *args, **kwargs)
    monkeypatch.setattr(Path, 'mkdir', refuse)
    assert _cli_error(['prepare-svhn', str(locked), '--source', str(source)], capsys) == (
        f'timm-sl prepare-svhn: cannot write into {locked} (Permission denied); allowed: a folder you can write to')
    assert list(locked.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason='root writes into read-only folders')
def test_read_only_folder(mats, tmp_path, capsys):
    source, _ = mats
    locked = tmp_path / 'locked'
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert _cli_error(['prepare-svhn', str(locked), '--source', str(source)], capsys) == (
            f"timm-sl prepare-svhn: {locked}: cannot write into it (permission denied), where the SVHN "
            f"output folder (train.py's --data-dir) goes; allowed: a place this user may write (not /proc, /sys)")
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize('kind', ['file', 'folder', 'link', 'link to nothing'])
def test_a_users_svhn_json_is_kept(mats, tmp_path, capsys, kind):
    """A file of the user's named svhn.json in the output folder was written over without a word; a folder there
    failed after every image was written ('svhn.json: is a directory', no allowed), after progress bars on stderr. A
    link there (to a file of the user's, or to nothing) was refused by the table even with --overwrite, which replaces
    the link by the record and keeps the file it names (as prepare-fashion-mnist does)."""
    source, _ = mats
    out = tmp_path / 'out'
    out.mkdir()
    mine = out / 'svhn.json'
    notes = tmp_path / 'notes.txt' if kind.startswith('link') else mine
    if kind == 'folder':
        mine.mkdir()
    elif kind != 'link to nothing':
        notes.write_text('my notes')
    if kind.startswith('link'):
        mine.symlink_to(notes)
    with pytest.raises(SystemExit) as info:
        main(['prepare-svhn', str(out), '--source', str(source)])
    said = ('is a folder; expected the record of a prepare-svhn run; allowed: move it away' if kind == 'folder' else
            'is already there; --overwrite replaces it')
    assert info.value.code == 2  # one line, no progress bar before it
    assert capsys.readouterr().err == f'timm-sl prepare-svhn: {mine} {said}\n'
    assert sorted(p.name for p in out.iterdir()) == ['svhn.json']
    if kind != 'folder':
        assert notes.read_text() == 'my notes' if kind != 'link to nothing' else not notes.exists()
        assert main(['prepare-svhn', str(out), '--source', str(source), '--overwrite']) == 0
        assert json.loads(mine.read_text())['dataset'] == 'svhn' and not mine.is_symlink()
        assert notes == mine or (notes.read_text() == 'my notes' if kind == 'link' else not notes.exists())


def test_a_folder_prepare_fashion_mnist_wrote_is_refused(mats, tmp_path, capsys):
    source, _ = mats
    out = tmp_path / 'data'
    out.mkdir()
    (out / 'fashion_mnist.json').write_text(json.dumps(dict(dataset='fashion-mnist')))
    with pytest.raises(SystemExit) as info:
        main(['prepare-svhn', str(out), '--source', str(source)])
    assert info.value.code == 2 and capsys.readouterr().err == (
        f'timm-sl prepare-svhn: {out}/fashion_mnist.json is there: {out} was written by timm-sl prepare-fashion-mnist; '
        f'allowed: another output folder (or move fashion_mnist.json away if that data set is gone)\n')
    assert sorted(p.name for p in out.iterdir()) == ['fashion_mnist.json']


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='no FIFOs')
def test_a_fifo_or_folder_where_a_file_is_read_is_named(mats, tmp_path, capsys):
    """A FIFO at svhn.json in the output: the command waited on it for ever; a FIFO or a folder named like a .mat file
    was 'not found'."""
    source, _ = mats
    out = tmp_path / 'out'
    out.mkdir()
    os.mkfifo(out / 'svhn.json')
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-svhn: {out}/svhn.json is a FIFO (named pipe), not a regular file; expected the record of a '
        f'prepare-svhn run; allowed: move it away')
    mat = source / 'test_32x32.mat'
    mat.unlink()
    mat.mkdir()
    assert _cli_error(['prepare-svhn', str(tmp_path / 'other'), '--source', str(source)], capsys) == (
        f"timm-sl prepare-svhn: {mat} is a folder; expected SVHN's test_32x32.mat")
    mat.rmdir()
    os.mkfifo(mat)
    assert _cli_error(['prepare-svhn', str(tmp_path / 'other'), '--source', str(source)], capsys) == (
        f"timm-sl prepare-svhn: {mat} is a FIFO (named pipe), not a regular file; expected SVHN's test_32x32.mat")
    assert not (tmp_path / 'other').exists()


@pytest.mark.parametrize('change', ['swapped', 'image deleted'])
def test_split_folders_swapped_or_cut_since_are_not_already_there(mats, tmp_path, capsys, change):
    """train/ and test/ swapped by hand (or an image deleted) after a finished run: the re-run said '30 train, 12 test
    images ... already there: nothing written', and train.py would train on the test images."""
    source, _ = mats
    out = tmp_path / 'svhn'
    assert main(['prepare-svhn', str(out), '--source', str(source)]) == 0
    if change == 'swapped':
        (out / 'train').rename(out / 'kept')
        (out / 'test').rename(out / 'train')
        (out / 'kept').rename(out / 'test')
    else:
        next((out / 'test' / '3').iterdir()).unlink()
    split = 'train' if change == 'swapped' else 'test'
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-svhn: {out / split} holds other images than svhn.json records for it (moved, swapped with '
        f'another split or deleted in part since); --overwrite writes it again')
    assert main(['prepare-svhn', str(out), '--source', str(source), '--overwrite']) == 0
    assert [sum(1 for _ in (out / split).rglob('*.png')) for split in ('train', 'test')] == [SIZES['train'],
                                                                                         SIZES['test']]


def test_a_file_managers_hidden_file_in_a_finished_split_is_not_another_split(mats, tmp_path, capsys):
    """A .DS_Store a file manager left in a finished split made the same command, run again, refuse it ('test holds
    files other than digit folders of PNGs; move it away first'), though timm reads no such file."""
    source, _ = mats
    out = tmp_path / 'svhn'
    argv = ['prepare-svhn', str(out), '--source', str(source)]
    assert main(argv) == 0
    for where in (out / 'test', out / 'train' / '7'):
        (where / '.DS_Store').write_bytes(b'\0')
    capsys.readouterr()
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith('(already there: nothing written)')


def test_the_same_files_moved_or_copied_elsewhere_are_the_same_settings(mats, tmp_path, capsys):
    """A finished folder moved with its .mat files (the source defaults to it), or the same files read from a copy,
    was refused as 'not empty' (--overwrite asked for): the record compared where the files lay. As for
    prepare-fashion-mnist, their bytes decide: nothing is written, exit 0."""
    source, _ = mats
    out = tmp_path / 'svhn'
    shutil.copytree(source, out)
    assert main(['prepare-svhn', str(out)]) == 0
    stamps = _stamps(out)
    out.rename(tmp_path / 'moved')
    out = tmp_path / 'moved'
    stamps = {out / p.relative_to(tmp_path / 'svhn'): t for p, t in stamps.items()}
    capsys.readouterr()
    for argv in ([str(out)], [str(out), '--source', str(source)]):
        assert main(['prepare-svhn', *argv]) == 0
        assert capsys.readouterr().out.endswith('(already there: nothing written)\n')
    assert _stamps(out) == stamps


def test_a_split_file_without_a_digit_is_refused(mats, tmp_path, capsys):
    """A .mat file (its arrays well formed) without images of a digit wrote an empty digit folder (exit 0): timm skips
    it, so train.py labelled every digit after it one lower in train than in test. Refused now; nothing is written."""
    source, _ = mats
    x = np.zeros((32, 32, 3, 20), np.uint8)
    y = np.array([d for d in range(1, 11) if d != 4] * 3, np.uint8)[:20, None]
    scipy_io.savemat(str(source / FILES['train']), {'X': x, 'y': y})
    out = tmp_path / 'svhn'
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys) == (
        f"timm-sl prepare-svhn: {source / FILES['train']} holds no image of digit 4 (timm would skip its empty folder "
        f"and label the digits after it differently than in the other splits); allowed: split files with images of "
        f"every digit")
    assert sorted(p.name for p in out.iterdir()) == []


@pytest.mark.parametrize('what', ['image', 'class folder'])
def test_a_finished_split_this_user_may_not_read_is_refused_not_taken_as_done(mats, tmp_path, capsys, monkeypatch,
                                                                              what):
    """An image (or a class folder) of a finished split made unreadable (chmod 000, another user's): a second run said
    'already there: nothing written' (exit 0) and train.py stopped at it later; a class folder was 'permission denied'
    only."""
    source, _ = mats
    out = tmp_path / 'svhn'
    prepare_svhn(out, source=source, progress=False)
    locked = out / 'train' / '3' if what == 'class folder' else sorted((out / 'train' / '3').iterdir())[0]
    access = os.access
    monkeypatch.setattr(os, 'access', lambda path, mode, **kw: Path(path) != locked and access(path, mode, **kw))
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-svhn: {locked} is not readable by this user, in a split folder an earlier run wrote '
        f'(train.py would stop at it); allowed: read permission for it (chmod u+rX), or the split folder moved away')
    assert (out / 'svhn.json').is_file() and len(list((out / 'train' / '3').iterdir())) == 3


@pytest.mark.skipif(os.geteuid() == 0, reason='root reads every file')
def test_a_finished_split_with_an_image_of_mode_000_is_refused(mats, tmp_path, capsys):
    source, _ = mats
    out = tmp_path / 'svhn'
    prepare_svhn(out, source=source, progress=False)
    locked = sorted((out / 'test' / '0').iterdir())[0]
    locked.chmod(0)
    assert _cli_error(['prepare-svhn', str(out), '--source', str(source)], capsys).startswith(
        f'timm-sl prepare-svhn: {locked} is not readable by this user, in a split folder an earlier run wrote')


def _fuzzed_arrays(rng, x: np.ndarray, y: np.ndarray) -> Dict[str, object]:
    """SVHN arrays mutated at value level: labels set to 0 / 11 / -1 / 1.5 / NaN / inf / 255 in another dtype; 'y' of
    text, a cell array, complex numbers, a sparse matrix, bools, a struct, reshaped or one short; 'X' of another dtype,
    shape or sparse; an array dropped, renamed by case or added."""
    import scipy.sparse
    arrays: Dict[str, object] = {'X': x.copy(), 'y': y.copy()}
    for _ in range(rng.randint(1, 2)):
        op, key = rng.randrange(9), rng.choice(['X', 'y'])
        value = arrays.get(key)
        if not isinstance(value, np.ndarray):
            continue
        if op == 0 and isinstance(arrays.get('y'), np.ndarray):
            labels = arrays['y'].astype(rng.choice([np.uint8, np.float64, np.int16, np.float32, np.int64]))
            with np.errstate(invalid='ignore'), contextlib.suppress(ValueError, OverflowError):  # NaN in ints
                labels[rng.randrange(len(labels)), 0] = rng.choice([0, 11, 10, 1, 255, 1.5, -1, np.nan, np.inf])
            arrays['y'] = labels
        elif op == 1:
            arrays[key] = rng.choice([value.astype(str), value.astype(object), value.astype(bool), {'a': value},
                                      value.astype(complex) + rng.choice([0, 1j])])
        elif op == 2:
            arrays[key] = scipy.sparse.csc_matrix(value.reshape(value.shape[0], -1).astype(float))
        elif op == 3 and isinstance(arrays.get('y'), np.ndarray):
            arrays['y'] = arrays['y'].reshape(rng.choice([(1, -1), (-1,), (-1, 1, 1)]))
        elif op == 4 and isinstance(arrays.get('X'), np.ndarray):
            arrays['X'] = arrays['X'].astype(rng.choice([np.float64, np.int16, np.uint16, np.int8]))
        elif op == 5:
            arrays[key] = value[..., :-1] if key == 'X' else value[:-1]
        elif op == 6:
            arrays[key.swapcase()] = arrays.pop(key)
        elif op == 7:
            arrays.pop(key)
        else:
            arrays[rng.choice(['extra', 'X_', 'labels'])] = np.arange(3)
    return arrays


def test_mat_files_mutated_at_random_are_written_as_they_say_or_refused_in_one_line(tmp_path, capsys):
    """Seeded fuzz (pass 25) of the training file's arrays through prepare-svhn: on exit 0 nothing on stderr and each
    image sits in the folder of its label mod 10 with its own pixels; otherwise one line names the file and train/ is
    not written. The source is never changed. It failed on a 'y' of text, cells or complex numbers."""
    import hashlib
    import random
    import warnings
    rng = random.Random(25)
    source = tmp_path / 'mats'
    source.mkdir()
    _write_mat(source / FILES['test'], 10, 1)
    x = np.random.default_rng(0).integers(0, 256, (32, 32, 3, 10), dtype=np.uint8)
    y = (np.arange(10) % 10 + 1).astype(np.uint8)[:, None]
    train = source / FILES['train']
    for case in range(40):
        arrays = _fuzzed_arrays(rng, x, y)
        try:
            scipy_io.savemat(str(train), arrays)
        except Exception:  # noqa: BLE001 (what savemat cannot write: no case)
            continue
        read = scipy_io.loadmat(str(train))
        digest = hashlib.sha256(train.read_bytes()).hexdigest()
        out = tmp_path / f'out{case}'
        with warnings.catch_warnings():
            warnings.simplefilter('always')
            try:
                status = main(['prepare-svhn', str(out), '--source', str(source)])
            except SystemExit as e:
                status = e.code
        _, err = capsys.readouterr()
        assert hashlib.sha256(train.read_bytes()).hexdigest() == digest
        if status == 0:
            assert err == '', (case, err)
            labels = read['y'].reshape(-1)
            images = {int(p.stem): int(p.parent.name) for p in (out / 'train').glob('*/*.png')}
            assert images == {i: int(labels[i]) % 10 for i in range(len(labels))}, case
            for i in (0, len(labels) - 1):
                pixels = np.asarray(Image.open(out / 'train' / str(images[i]) / f'{i:06d}.png'))
                assert (pixels == read['X'][..., i]).all(), case
        else:
            assert status == 2 and err.count('\n') == 1 and str(train) in err, (case, err)
            assert not (out / 'train').exists(), case


def test_a_root_named_with_a_newline_is_quoted_in_the_closing_line(mats, tmp_path, capsys, monkeypatch):
    """The prepare-* lines wrote DIR as given: a DIR named with a newline broke the line in two, neither half naming
    the folder written (found by fuzzing argv at random)."""
    source, _ = mats
    monkeypatch.chdir(tmp_path)
    assert main(['prepare-svhn', 'svhn\nz', '--source', str(source)]) == 0
    assert capsys.readouterr().out == "30 train, 12 test images in digit folders 0-9 under 'svhn\\nz/{train,test}'\n"

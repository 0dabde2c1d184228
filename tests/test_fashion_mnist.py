"""``timm-sl prepare-fashion-mnist``: real Fashion-MNIST images (Debian's dataset-fashion-mnist, a few hundred of them)
-> train/ and test/ class folders that timm's reader and ``timm-sl reproduce --dataset fashion-mnist`` take; generated
idx files for the hostile cases."""
import gzip
import json
import os
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from timm_sl.tools.cli import main
from timm_sl.tools.fashion_mnist import (
    CLASS_FOLDERS, DEFAULT_SOURCE, LABEL_NAMES, prepare_fashion_mnist, read_fashion_mnist, read_idx)

FILES = ('train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz', 't10k-images-idx3-ubyte.gz',
         't10k-labels-idx1-ubyte.gz')
real = pytest.mark.skipif(not all((Path(DEFAULT_SOURCE) / f).is_file() for f in FILES),
                          reason=f'Fashion-MNIST not installed in {DEFAULT_SOURCE} (apt install dataset-fashion-mnist)')


def _idx(array: np.ndarray) -> bytes:
    return bytes([0, 0, 8, array.ndim]) + struct.pack(f'>{array.ndim}I', *array.shape) + array.tobytes()


@pytest.fixture
def source(tmp_path) -> Path:
    """Generated idx files: 30 training and 20 test images, labels i % 10."""
    folder = tmp_path / 'idx'
    folder.mkdir()
    rng = np.random.default_rng(0)
    for prefix, n in (('train', 30), ('t10k', 20)):
        (folder / f'{prefix}-images-idx3-ubyte.gz').write_bytes(gzip.compress(_idx(
            rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))))
        (folder / f'{prefix}-labels-idx1-ubyte.gz').write_bytes(gzip.compress(_idx(
            (np.arange(n) % 10).astype(np.uint8))))
    return folder


def _cli_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0] == str(info.value)
    return err[0]


@real
def test_real_images_round_trip_and_timm_reads_them(tmp_path):
    import timm.data
    out = tmp_path / 'fmnist'
    info = prepare_fashion_mnist(out, limit=300, progress=False)
    images, labels = read_fashion_mnist(DEFAULT_SOURCE, 'train')
    assert (images.shape, labels.shape) == ((60000, 28, 28), (60000,))
    assert info['counts']['train'] == dict(zip(CLASS_FOLDERS, np.bincount(labels[:300], minlength=10).tolist()))
    assert sum(info['counts']['test'].values()) == 300 and info['label_names'] == list(LABEL_NAMES)
    for i in (0, 7, 299):
        written = np.asarray(Image.open(out / 'train' / CLASS_FOLDERS[labels[i]] / f'{i:05d}.png'))
        assert written.shape == (32, 32, 3) and (written == written[..., :1]).all()  # grey as RGB
        upscaled = np.asarray(Image.fromarray(images[i]).resize((32, 32), Image.BICUBIC))
        np.testing.assert_array_equal(written[..., 0], upscaled)
    # timm numbers the sorted class folders: the label prefix keeps Fashion-MNIST's numbers
    dataset = timm.data.create_dataset('', root=str(out), split='train')
    assert len(dataset) == 300 and dataset.reader.class_to_idx == {c: i for i, c in enumerate(CLASS_FOLDERS)}
    pixels = np.stack([np.asarray(dataset[i][0], np.float64) / 255 for i in range(len(dataset))])
    assert info['mean'] == [round(pixels.mean(), 4)] * 3 and info['std'] == [round(pixels.std(), 4)] * 3
    assert 0.2 < info['mean'][0] < 0.4 and 0.3 < info['std'][0] < 0.4
    assert (out / 'label_names.txt').read_text().splitlines() == list(LABEL_NAMES)
    assert json.loads((out / 'fashion_mnist.json').read_text())['limit'] == 300


@real
def test_recipe_holds_the_full_training_sets_mean_and_std():
    """recipes/fashion_mnist.yaml: the CIFAR-10 regime with the data keys of the prepared folder and the statistics
    of all 60,000 training images as written (computed here from the idx file, as prepare does)."""
    import yaml
    from timm_sl.tools.fashion_mnist import _mean_std, _upscale
    root = Path(__file__).resolve().parents[1] / 'recipes'
    recipe, cifar = (yaml.safe_load((root / name).read_text()) for name in ('fashion_mnist.yaml', 'cifar10.yaml'))
    images, _ = read_fashion_mnist(DEFAULT_SOURCE, 'train')
    mean, std = _mean_std(_upscale(images))
    assert recipe['mean'] == [round(mean, 4)] * 3 and recipe['std'] == [round(std, 4)] * 3
    data_keys = {'dataset', 'dataset_download', 'mean', 'std'}
    assert {k: v for k, v in recipe.items() if k not in data_keys} == {
        k: v for k, v in cifar.items() if k not in data_keys}
    assert 'dataset' not in recipe  # an image folder


def test_cli_prints_the_stats_and_a_rerun_writes_nothing(source, tmp_path, capsys):
    out = tmp_path / 'fm'
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source)]) == 0
    printed = capsys.readouterr().out
    assert f'30 train, 20 test images in class folders 0_t-shirt_top ... 9_ankle_boot under {out}/{{train,test}}\n' \
        in printed
    info = json.loads((out / 'fashion_mnist.json').read_text())
    assert f'--mean {info["mean"][0]} {info["mean"][0]} {info["mean"][0]} --std {info["std"][0]}' in printed
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob('*')}
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source)]) == 0
    assert '(already there: nothing written)' in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in out.rglob('*')} == stamps
    assert sorted(p.name for p in (out / 'test').iterdir()) == list(CLASS_FOLDERS)
    assert [p.name for p in out.iterdir() if p.name.startswith('.')] == []  # no staging folder left



@pytest.mark.parametrize('key,value', [('classes', True), ('classes', ['a', 'b']), ('label_names', None),
                                       ('mean', ['x', 1, 2]), ('std', [float('nan')] * 3)])
def test_a_rerun_over_a_damaged_record_is_refused_in_one_line(source, tmp_path, capsys, key, value):
    """A rerun with nothing to write returned the record as it was: 'classes': true ended in a traceback, another
    list printed class folders that are not there, a mean of strings or NaN was printed as train.py's --mean."""
    out = tmp_path / 'fm'
    prepare_fashion_mnist(out, source=source, progress=False)
    record = json.loads((out / 'fashion_mnist.json').read_text())
    (out / 'fashion_mnist.json').write_text(json.dumps({**record, key: value}))
    with pytest.raises(SystemExit):
        main(['prepare-fashion-mnist', str(out), '--source', str(source)])
    assert capsys.readouterr().err == (
        f'timm-sl prepare-fashion-mnist: {out / "train"} has a fashion_mnist.json without its images per class, class '
        f'folders or mean / std (edited or damaged); allowed: --overwrite, which writes it again\n')
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source), '--overwrite']) == 0
    assert json.loads((out / 'fashion_mnist.json').read_text()) == record


def test_a_split_deleted_from_a_finished_output_is_written_again_alone(source, tmp_path, capsys):
    """test/ deleted: the re-run used to refuse, blaming train/ ('was written with other settings'); it writes test/
    and names it, train/ and the mean / std stay."""
    out = tmp_path / 'fm'
    prepare_fashion_mnist(out, source=source, progress=False)
    info = json.loads((out / 'fashion_mnist.json').read_text())
    train = {p: p.stat().st_mtime_ns for p in (out / 'train').rglob('*')}
    shutil.rmtree(out / 'test')
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source)]) == 0
    assert f'under {out}/{{train,test}} (test written; train already there)\n' in capsys.readouterr().out
    assert sum(1 for _ in (out / 'test').rglob('*.png')) == 20
    assert {p: p.stat().st_mtime_ns for p in (out / 'train').rglob('*')} == train
    assert json.loads((out / 'fashion_mnist.json').read_text()) == info
    shutil.rmtree(out / 'train')
    assert prepare_fashion_mnist(out, source=source, progress=False)['written'] == ['train']
    assert json.loads((out / 'fashion_mnist.json').read_text()) == info


def test_a_source_file_replaced_since_is_not_already_there(source, tmp_path, capsys):
    """Another labels file put in --source since: the re-run said 'already there: nothing written', keeping the images
    of the old files."""
    out = tmp_path / 'fm'
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source)]) == 0
    labels = source / 'train-labels-idx1-ubyte.gz'
    labels.write_bytes(gzip.compress(_idx(((np.arange(30) + 1) % 10).astype(np.uint8))))
    os.utime(labels, ns=(labels.stat().st_atime_ns, labels.stat().st_mtime_ns + 10 ** 9))
    capsys.readouterr()
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/train was written with other settings (train-labels-idx1-ubyte.gz in '
        f'{source}: other bytes since); allowed: --overwrite, which replaces it with these')
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source), '--overwrite']) == 0
    assert sorted(p.name for p in (out / 'train' / '1_trouser').iterdir()) == ['00000.png', '00010.png', '00020.png']



@pytest.mark.parametrize('older', ['no files', 'files without sha256'])
def test_a_record_of_an_older_version_is_refused_in_one_line(source, tmp_path, capsys, older):
    """A folder an older prepare-fashion-mnist wrote (its record holds no file identities, or path, size and time
    only) was compared by images per class: other files of the same counts since (Fashion-MNIST's files all hold
    6,000 / 1,000 of each class) were 'already there: nothing written', keeping the old images."""
    out = tmp_path / 'fm'
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source)]) == 0
    record = json.loads((out / 'fashion_mnist.json').read_text())
    if older == 'no files':
        del record['files']
    else:
        record['files'] = {stem: dict(file=f['file'], bytes=f['bytes'], mtime_ns=1) for stem, f in
                           record['files'].items()}
    (out / 'fashion_mnist.json').write_text(json.dumps(record))
    labels = source / 'train-labels-idx1-ubyte.gz'  # the same counts per class, other labels
    labels.write_bytes(gzip.compress(_idx(((np.arange(30) + 1) % 10).astype(np.uint8))))
    capsys.readouterr()
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/train was written by an older prepare-fashion-mnist, whose '
        f'fashion_mnist.json does not say what its source files held (their sha256); --overwrite writes it again')
    assert sorted(p.name for p in (out / 'train' / '1_trouser').iterdir()) == ['00001.png', '00011.png', '00021.png']
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source), '--overwrite']) == 0
    assert sorted(p.name for p in (out / 'train' / '1_trouser').iterdir()) == ['00000.png', '00010.png', '00020.png']
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source)]) == 0  # recorded now: kept
    assert 'already there: nothing written' in capsys.readouterr().out


def test_a_source_file_of_the_same_size_and_time_but_other_bytes_is_caught(source, tmp_path, capsys):
    """Another labels file of the same size with its time kept (as tar extracts an archive): path, size and mtime
    matched, so the re-run kept the images of the old labels."""
    out = tmp_path / 'fm'
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source)]) == 0
    labels = source / 'train-labels-idx1-ubyte'
    data = gzip.decompress((source / 'train-labels-idx1-ubyte.gz').read_bytes())
    (source / 'train-labels-idx1-ubyte.gz').unlink()
    shutil.rmtree(out)
    labels.write_bytes(data)  # uncompressed: its size does not depend on what it holds
    stat = labels.stat()
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source)]) == 0
    other = ((np.arange(30) + 1) % 10).astype(np.uint8)  # the same counts per class, other labels
    labels.write_bytes(data[:8] + other.tobytes())
    os.utime(labels, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert labels.stat().st_size == stat.st_size
    capsys.readouterr()
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/train was written with other settings (train-labels-idx1-ubyte in '
        f'{source}: other bytes since); allowed: --overwrite, which replaces it with these')


def test_a_deleted_label_names_file_is_written_again(source, tmp_path, capsys):
    """label_names.txt deleted: the re-run said "nothing written" and "class names: fm/label_names.txt", which was
    not there (timm-sl export --label-names reads it)."""
    out = tmp_path / 'fm'
    prepare_fashion_mnist(out, source=source, progress=False)
    (out / 'label_names.txt').unlink()
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source)]) == 0
    assert f'class names: {out / "label_names.txt"}' in capsys.readouterr().out
    assert (out / 'label_names.txt').read_text().splitlines() == list(LABEL_NAMES)


def test_a_limit_that_empties_a_class_is_refused(source, tmp_path, capsys):
    """--limit 5 left five class folders empty: timm numbers only folders with images, so train and test labels of
    every class after the first empty one disagreed, silently."""
    out = tmp_path / 'fm'
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source), '--limit', '5'], capsys) == (
        'timm-sl prepare-fashion-mnist: --limit 5 leaves 5_sandal, 6_shirt, 7_sneaker, 8_bag, 9_ankle_boot without a '
        'train image (timm would label the classes after it differently in train and test); allowed: --limit >= 10 '
        'or none')
    assert not out.exists() or not any(out.rglob('*.png'))


def test_other_settings_need_overwrite_and_foreign_files_are_kept(source, tmp_path, capsys):
    out = tmp_path / 'fm'
    prepare_fashion_mnist(out, source=source, progress=False)
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source), '--limit', '10'], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/train was written with other settings (--limit none -> 10); allowed: '
        f'the settings it was written with (no --limit), or --overwrite, which replaces it with these')
    assert sum(1 for _ in (out / 'train').rglob('*.png')) == 30
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source), '--limit', '10', '--overwrite']) == 0
    assert sum(1 for _ in (out / 'train').rglob('*.png')) == 10 and sum(1 for _ in (out / 'test').rglob('*.png')) == 10
    (out / 'test' / 'notes.txt').write_text('mine')
    (out / 'fashion_mnist.json').unlink()
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source), '--overwrite'], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/test holds files other than Fashion-MNIST class folders of PNGs; '
        f'move it away first')
    assert (out / 'test' / 'notes.txt').read_text() == 'mine'
    (out / 'test' / 'notes.txt').unlink()  # a PNG of the user's in a class folder: kept by --overwrite too
    mine = out / 'train' / '0_t-shirt_top' / 'mine.png'
    mine.write_bytes((out / 'test' / '0_t-shirt_top').glob('*.png').__next__().read_bytes())
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source), '--overwrite'], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/train holds files other than Fashion-MNIST class folders of PNGs; '
        f'move it away first')
    assert mine.is_file()


def _corrupt(path: Path, how: str) -> None:
    raw = gzip.decompress(path.read_bytes())
    data = {'gzip': b'not gzip at all', 'magic': gzip.compress(b'\x00\x00\x09' + raw[3:]),
            'short': gzip.compress(raw[:-5]), 'cut': path.read_bytes()[:100]}[how]
    path.write_bytes(data)


@pytest.mark.parametrize('file,how,message', [
    ('train-images-idx3-ubyte.gz', 'gzip', '{F} is not readable gzip data (Not a gzipped file'),
    ('t10k-labels-idx1-ubyte.gz', 'magic', '{F} starts with 00000901; expected an idx file of unsigned bytes with 1 '
                                           'dimension (header 00000801)'),
    ('train-images-idx3-ubyte.gz', 'short', '{F} holds 23515 bytes of data for shape (30, 28, 28): the file is cut '
                                            'short or has trailing bytes'),
    ('t10k-images-idx3-ubyte.gz', 'cut', '{F} is not readable gzip data ('),
])
def test_a_bad_source_file_is_named_and_nothing_is_written(source, tmp_path, capsys, file, how, message):
    _corrupt(source / file, how)
    out = tmp_path / 'fm'
    error = _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys)
    assert error.startswith('timm-sl prepare-fashion-mnist: ' + message.format(F=source / file)), error
    assert not out.exists() or not any(out.iterdir())


def test_missing_file_and_labels_that_disagree(source, tmp_path, capsys):
    (source / 't10k-labels-idx1-ubyte.gz').unlink()
    assert _cli_error(['prepare-fashion-mnist', str(tmp_path / 'fm'), '--source', str(source)], capsys).startswith(
        f'timm-sl prepare-fashion-mnist: {source}/t10k-labels-idx1-ubyte.gz not found: --source must be the folder '
        f'holding the four Fashion-MNIST idx files')
    (source / 't10k-labels-idx1-ubyte').write_bytes(_idx(np.full(19, 3, np.uint8)))  # uncompressed is read too
    assert _cli_error(['prepare-fashion-mnist', str(tmp_path / 'fm'), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {source}/t10k-images-idx3-ubyte.gz holds 20 images but '
        f'{source}/t10k-labels-idx1-ubyte 19 labels')
    assert read_idx(source / 't10k-labels-idx1-ubyte', 1).tolist() == [3] * 19


def test_mnist_digits_under_the_same_file_names_are_refused(source, tmp_path, capsys):
    """torchvision's MNIST/raw holds files of the same names: they were written as t-shirts, trousers ... silently."""
    mnist_test = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]  # MNIST's test digits per class
    (source / 't10k-labels-idx1-ubyte.gz').write_bytes(gzip.compress(_idx(
        np.repeat(np.arange(10), mnist_test).astype(np.uint8))))
    out = tmp_path / 'fm'
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {source}/t10k-labels-idx1-ubyte.gz holds 892 to 1,135 images per class, '
        f"not Fashion-MNIST's 1,000 of each (MNIST's files have the same names); expected Fashion-MNIST's idx files")
    assert not out.exists() or not any(out.iterdir())


def test_one_file_under_both_split_names_is_refused(source, tmp_path, capsys):
    (source / 't10k-images-idx3-ubyte.gz').write_bytes((source / 'train-images-idx3-ubyte.gz').read_bytes())
    assert _cli_error(['prepare-fashion-mnist', str(tmp_path / 'fm'), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {source}/train-images-idx3-ubyte.gz and {source}/t10k-images-idx3-ubyte.gz '
        f'hold the same bytes: the train and test splits would be the same images (train.py would evaluate on images '
        f'it trains on); allowed: the files of each split as released')
    assert not (tmp_path / 'fm').exists()


def test_an_output_that_cannot_be_written_is_one_line(source, tmp_path, capsys, monkeypatch):
    a_file = tmp_path / 'file'
    a_file.write_text('')
    assert _cli_error(['prepare-fashion-mnist', str(a_file), '--source', str(source)], capsys) == (
        f"timm-sl prepare-fashion-mnist: {a_file} is a file; expected the Fashion-MNIST output folder (train.py's "
        f"--data-dir)")
    assert _cli_error(['prepare-fashion-mnist', str(a_file / 'sub'), '--source', str(source)], capsys) == (
        f"timm-sl prepare-fashion-mnist: {a_file / 'sub'}: {a_file} is a file, not a folder; cannot create the "
        f"Fashion-MNIST output folder (train.py's --data-dir) below it")
    from timm_sl.tools import fashion_mnist
    # root may write anywhere: no writing for anyone (reading, the --source the table checks first, is left alone)
    monkeypatch.setattr(fashion_mnist.os, 'access', lambda path, mode: not mode & os.W_OK)
    assert _cli_error(['prepare-fashion-mnist', str(tmp_path / 'new' / 'fm'), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {tmp_path} is not writable; choose an output folder you can write to')
    assert not (tmp_path / 'new').exists()


def test_reproduce_reads_the_prepared_folder(source, tmp_path, capsys):
    sys.path.insert(0, str(Path(__file__).parent))
    from test_reproduce import FAKE_TRAIN
    out = tmp_path / 'fm'
    prepare_fashion_mnist(out, source=source, progress=False)
    (tmp_path / 'train.py').write_text(FAKE_TRAIN)
    assert main(['reproduce', '--data-dir', str(out), '--dataset', 'fashion-mnist', '--families', 'vit',
                 '--out', str(tmp_path / 'sweep'), '--train-script', str(tmp_path / 'train.py'), '--',
                 '--epochs', '1', '--batch-size', '8']) == 0  # a batch of the recipe's 128 > 30 images: no step
    argv = (tmp_path / 'sweep' / 'runs' / 'vit-sl-s0' / 'argv.log').read_text()
    assert f'--config {Path(__file__).resolve().parents[1] / "recipes" / "fashion_mnist.yaml"} --model sl_vit_32' \
        in argv
    report = (tmp_path / 'sweep' / 'report.md').read_text()
    assert '# Table 2 reproduction: fashion-mnist recipe' in report and f'data: image folder {out}' in report
    assert '| vit | SL | `sl_vit_32` | 1/1 | 50.00 | +20.00 | - | - |' in report  # no paper column for it
    (out / 'test' / CLASS_FOLDERS[3]).rename(out / 'test' / 'x')  # a class folder renamed: refused before any run
    assert 'only in' in _cli_error(['reproduce', '--data-dir', str(out), '--dataset', 'fashion-mnist', '--families',
                                    'vit', '--out', str(tmp_path / 'sweep2'), '--train-script',
                                    str(tmp_path / 'train.py')], capsys)


def test_a_users_label_names_and_json_are_kept_without_overwrite(source, tmp_path, capsys):
    """DIR/label_names.txt and DIR/fashion_mnist.json were replaced without --overwrite."""
    out = tmp_path / 'fm'
    out.mkdir()
    for name in ('label_names.txt', 'fashion_mnist.json'):
        (out / name).write_text('mine\n')
        assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys) == (
            f'timm-sl prepare-fashion-mnist: {out / name} is already there; --overwrite replaces it')
        assert (out / name).read_text() == 'mine\n' and not (out / 'train').exists()
        (out / name).unlink()
    (out / 'label_names.txt').mkdir()
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source), '--overwrite'], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out / "label_names.txt"} is a folder; expected the class names; allowed: '
        f'move it away')
    (out / 'label_names.txt').rmdir()
    (out / 'label_names.txt').write_text('mine\n')
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source), '--overwrite']) == 0
    assert (out / 'label_names.txt').read_text().splitlines()[0] == 'T-shirt/top'


@pytest.mark.parametrize('target', ['file', 'nothing'])
@pytest.mark.parametrize('name', ['label_names.txt', 'fashion_mnist.json'])
def test_overwrite_replaces_a_link_not_the_file_it_links_to(source, tmp_path, capsys, name, target):
    """label_names.txt as a link to a file of the user's: --overwrite wrote the label names over that file. A link
    to nothing was replaced without --overwrite."""
    out = tmp_path / 'fm'
    out.mkdir()
    mine = tmp_path / 'mine.txt'
    if target == 'file':
        mine.write_text('my notes\n')
    (out / name).symlink_to(mine)
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out / name} is already there; --overwrite replaces it')
    assert (out / name).is_symlink() and not (out / 'train').exists()
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source), '--overwrite']) == 0
    assert (mine.read_text() == 'my notes\n' if target == 'file' else not mine.exists())
    assert not (out / name).is_symlink()
    assert (out / 'label_names.txt').read_text().splitlines() == list(LABEL_NAMES)
    assert json.loads((out / 'fashion_mnist.json').read_text())['dataset'] == 'fashion-mnist'


def test_train_and_test_files_under_each_others_names_are_refused(source, tmp_path, capsys):
    """The release's t10k files renamed train-* and the other way round: 10,000 training and 60,000 test images were
    written without a word (here 20 and 30)."""
    for kind in ('images-idx3', 'labels-idx1'):
        train, test = source / f'train-{kind}-ubyte.gz', source / f't10k-{kind}-ubyte.gz'
        swap = source / 'swap'
        train.rename(swap)
        test.rename(train)
        swap.rename(test)
    out = tmp_path / 'fm'
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {source}/train-labels-idx1-ubyte.gz holds 20 labels but '
        f'{source}/t10k-labels-idx1-ubyte.gz 30: the training split would be the smaller, as with the train and t10k '
        f"files under each other's names; allowed: the files as released (train 60,000, t10k 10,000 images)")
    assert not out.exists()


def test_a_folder_prepare_svhn_wrote_is_refused(source, tmp_path, capsys):
    """SVHN's split folders moved away, Fashion-MNIST written in their place: svhn.json stayed, so prepare-svhn then
    said 'already there: nothing written' over Fashion-MNIST's images."""
    out = tmp_path / 'data'
    out.mkdir()
    (out / 'svhn.json').write_text(json.dumps(dict(dataset='svhn', sources={}, counts={})))
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/svhn.json is there: {out} was written by timm-sl prepare-svhn; '
        f'allowed: another output folder (or move svhn.json away if that data set is gone)')
    assert sorted(p.name for p in out.iterdir()) == ['svhn.json']


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='no FIFOs')
def test_a_fifo_or_folder_where_a_file_is_read_is_named(source, tmp_path, capsys):
    """A FIFO at fashion_mnist.json in the output: the command waited on it for ever; a FIFO or a folder under an idx
    file's name in --source was 'not found'."""
    out = tmp_path / 'fm'
    out.mkdir()
    os.mkfifo(out / 'fashion_mnist.json')
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/fashion_mnist.json is a FIFO (named pipe), not a regular file; expected '
        f'the record of a prepare-fashion-mnist run; allowed: move it away')
    labels = source / 't10k-labels-idx1-ubyte.gz'
    for kind in ('FIFO (named pipe), not a regular file', 'folder'):
        labels.unlink() if labels.is_fifo() or labels.is_file() else labels.rmdir()
        os.mkfifo(labels) if kind.startswith('FIFO') else labels.mkdir()
        assert _cli_error(['prepare-fashion-mnist', str(tmp_path / 'other'), '--source', str(source)], capsys) == (
            f'timm-sl prepare-fashion-mnist: {labels} is a {kind}; expected a Fashion-MNIST idx file')
    assert sorted(p.name for p in tmp_path.iterdir()) == ['fm', 'idx']


def test_split_folders_swapped_since_are_not_already_there(source, tmp_path, capsys):
    """train/ and test/ swapped by hand after a finished run: the re-run said 'already there: nothing written', and
    train.py would train on the test images."""
    out = tmp_path / 'fm'
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source)]) == 0
    (out / 'train').rename(out / 'kept')
    (out / 'test').rename(out / 'train')
    (out / 'kept').rename(out / 'test')
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/train holds other images than fashion_mnist.json records for it (moved, '
        f'swapped with another split or deleted in part since); --overwrite writes it again')
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source), '--overwrite']) == 0
    assert [sum(1 for _ in (out / split).rglob('*.png')) for split in ('train', 'test')] == [30, 20]


def test_a_record_cut_short_by_a_full_disk_is_not_left_half_written(source, tmp_path, capsys, monkeypatch):
    """fashion_mnist.json was written in place: a full disk while writing it left half a record, which reproduce read
    as a prepared folder of '? train, ? test images'. It is written beside and moved over: cut short, there is none,
    and the next call writes the folder again."""
    import pathlib
    out = tmp_path / 'fm'
    write_text = pathlib.Path.write_text

    def full_disk(path, text, *args, **kwargs):
        if path.name.startswith(('fashion_mnist.json', '.fashion_mnist.json')):
            write_text(path, text[:len(text) // 2])
            raise OSError(28, 'No space left on device', str(path))
        return write_text(path, text, *args, **kwargs)
    monkeypatch.setattr(pathlib.Path, 'write_text', full_disk)
    assert 'no space left on device' in _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source)],
                                                   capsys)
    assert not (out / 'fashion_mnist.json').exists() and not list(out.glob('.fashion_mnist.json*'))
    monkeypatch.setattr(pathlib.Path, 'write_text', write_text)
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source), '--overwrite']) == 0
    assert json.loads((out / 'fashion_mnist.json').read_text())['dataset'] == 'fashion-mnist'


def test_a_file_managers_hidden_file_in_a_finished_split_is_not_another_split(source, tmp_path, capsys):
    """A .DS_Store (macOS Finder) or .directory (KDE) a file manager left in a finished split made the same command,
    run again, refuse it: 'train holds files other than Fashion-MNIST class folders of PNGs; move it away first'.
    timm reads no such file: the split is still the one recorded, and nothing is written; an image it would read
    (a hidden .png too) still makes it another split."""
    out = tmp_path / 'fm'
    argv = ['prepare-fashion-mnist', str(out), '--source', str(source)]
    assert main(argv) == 0
    (out / 'train' / '.DS_Store').write_bytes(b'\0')
    (out / 'test' / '3_dress' / '.directory').write_text('[Dolphin]\n')
    capsys.readouterr()
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith('(already there: nothing written)')
    assert (out / 'train' / '.DS_Store').read_bytes() == b'\0'
    (out / 'test' / '3_dress' / '.directory').unlink()
    (out / 'test' / '3_dress' / '.x.png').write_bytes(b'png')
    assert _cli_error(argv, capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/test holds files other than Fashion-MNIST class folders of PNGs; move '
        f'it away first')  # not one this command names its images: the user's, which --overwrite would not keep


def test_a_second_run_from_another_source_names_what_differs_and_same_bytes_elsewhere_are_the_same(source, tmp_path,
                                                                                                   capsys):
    """prepare-fashion-mnist fm --source raw --limit 30, then from another source: the refusal said 'was written with
    other settings (or not finished); --overwrite replaces it', naming neither the setting that differed nor what is
    allowed, and it refused the same files copied to another folder, which write the same images."""
    out, copy, other = tmp_path / 'fm', tmp_path / 'copy', tmp_path / 'other'
    assert main(['prepare-fashion-mnist', str(out), '--source', str(source), '--limit', '30']) == 0
    shutil.copytree(source, copy)  # the same bytes elsewhere: the same images, nothing written
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob('*')}
    capsys.readouterr()
    assert main(['prepare-fashion-mnist', str(out), '--source', str(copy), '--limit', '30']) == 0
    assert '(already there: nothing written)' in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in out.rglob('*')} == stamps
    shutil.copytree(source, other)  # the same images uncompressed: other files
    for name in FILES[:2]:
        (other / name[:-3]).write_bytes(gzip.decompress((other / name).read_bytes()))
        (other / name).unlink()
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(other), '--limit', '20'], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/train was written with other settings (--limit 30 -> 20; --source '
        f'{source} -> {other}, whose train-images-idx3-ubyte, train-labels-idx1-ubyte hold other bytes); allowed: the '
        f'settings it was written with (--limit 30, --source {source}), or --overwrite, which replaces it with these')
    assert {p: p.stat().st_mtime_ns for p in out.rglob('*')} == stamps
    (out / 'fashion_mnist.json').unlink()  # an earlier run cut off before its record
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source), '--limit', '30'], capsys) == (
        f'timm-sl prepare-fashion-mnist: {out}/train holds images but no fashion_mnist.json says what they were '
        f'written from (an earlier run not finished, or the record deleted or damaged); allowed: --overwrite, which '
        f'writes it again')


@pytest.mark.parametrize('command', ['prepare-fashion-mnist', 'prepare-svhn'])
def test_a_prepare_command_into_a_folder_another_still_writes_is_refused(command, source, tmp_path, capsys):
    """A second prepare-fashion-mnist into the folder a first one still wrote removed the first's hidden split folder
    mid-write: the first ended 'finished, 3000 train images' over a train/ of 2632, its record counting 3000. The folder
    is held while a command writes it; a second is refused in one line and writes nothing."""
    import fcntl
    from test_svhn import _write_mat
    root = tmp_path / 'out'
    root.mkdir()
    if command == 'prepare-svhn':
        source = tmp_path / 'mat'
        source.mkdir()
        _write_mat(source / 'train_32x32.mat', 20, 0)
        _write_mat(source / 'test_32x32.mat', 10, 1)
    handle = os.open(root, os.O_RDONLY)  # the first command, still writing
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert _cli_error([command, str(root), '--source', str(source)], capsys) == (
            f'timm-sl {command}: {root} is being written by another timm-sl prepare command, or read by a timm-sl '
            f'reproduce, still running: written now, its split folders would mix the images of both or change under '
            f'the runs (a count recorded that is not there); allowed: wait for it to end')
        assert list(root.iterdir()) == []
    finally:
        os.close(handle)
    main([command, str(root), '--source', str(source)])  # once the first has ended
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ['test', 'train']


def test_a_folder_on_a_file_system_without_locks_is_still_prepared(source, tmp_path, monkeypatch):
    """Where the system cannot lock a folder (some network mounts: 'No locks available'), the folder is written as
    before, unheld, not refused."""
    import errno
    import fcntl

    def no_locks(*args):
        raise OSError(errno.ENOLCK, 'No locks available')
    monkeypatch.setattr(fcntl, 'flock', no_locks)
    info = prepare_fashion_mnist(tmp_path / 'out', source=source, progress=False)
    assert info['written'] == ['train', 'test'] and sum(info['counts']['train'].values()) == 30


def test_overwrite_keeps_the_mode_given_label_names(source, tmp_path):
    """label_names.txt made private (chmod 600) came back readable by all after --overwrite with other settings: it
    was deleted and written anew. It is written beside and moved over, keeping its mode, as the record is."""
    out = tmp_path / 'fm'
    prepare_fashion_mnist(out, source=source, progress=False)
    names = out / 'label_names.txt'
    names.chmod(0o600)
    prepare_fashion_mnist(out, source=source, limit=10, overwrite=True, progress=False)
    assert names.stat().st_mode & 0o777 == 0o600 and names.read_text().splitlines() == list(LABEL_NAMES)


def test_overwrite_of_a_split_whose_images_cannot_be_removed_is_refused_before_writing(source, tmp_path, capsys,
                                                                                      monkeypatch):
    """--overwrite with other settings over a train/ whose class folder this user may not change (a read-only mount):
    every image was written into the hidden folder, the record deleted, and the run ended on 'device or resource busy'.
    It is refused before anything is written, the earlier output and its record whole."""
    import timm_sl.tools._splits as splits
    out = tmp_path / 'fm'
    prepare_fashion_mnist(out, source=source, progress=False)
    record = (out / 'fashion_mnist.json').read_text()
    locked = out / 'train' / '3_dress'
    monkeypatch.setattr(splits, 'unwritable', lambda folder: PermissionError(13, 'Permission denied')
                        if folder == locked else None)
    assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source), '--limit', '10', '--overwrite'],
                      capsys) == (
        f'timm-sl prepare-fashion-mnist: {locked}: cannot write into this folder (permission denied), whose images '
        f'would be replaced; allowed: folders this user may write, or another output folder (nothing was written)')
    assert (out / 'fashion_mnist.json').read_text() == record
    assert sum(1 for _ in (out / 'train').rglob('*.png')) == 30
    assert sorted(p.name for p in out.iterdir()) == ['fashion_mnist.json', 'label_names.txt', 'test', 'train']


def test_idx_files_without_a_class_are_refused(source, tmp_path, capsys):
    """A subset of the release (its own counts, every header right) whose training labels lack a class wrote an empty
    class folder there (exit 0): timm skips it, so train.py on the folder labelled every class after it one lower in
    train than in test. Only --limit was checked so; the files are now, with and without --limit."""
    labels = source / 'train-labels-idx1-ubyte.gz'
    labels.write_bytes(gzip.compress(_idx(np.array([c for c in range(30) if c % 10 != 3], np.uint8)[:30] % 10)))
    images = source / 'train-images-idx3-ubyte.gz'
    images.write_bytes(gzip.compress(_idx(np.zeros((27, 28, 28), np.uint8))))
    out = tmp_path / 'fm'
    for limit in ([], ['--limit', '25']):
        assert _cli_error(['prepare-fashion-mnist', str(out), '--source', str(source), *limit], capsys) == (
            f"timm-sl prepare-fashion-mnist: {labels} holds no image of 3_dress (timm would label the classes after "
            f"it differently in train and test); allowed: idx files with images of every class in both splits")
        assert not out.exists()

import pytest
from PIL import Image

from timm_sl.cli import main
from timm_sl.demo import load_digits_split
from timm_sl.plot import plot_curves

pytest.importorskip('sklearn')


def test_digits_split_is_real_and_disjoint():
    train, val = load_digits_split(val_fraction=0.2)
    assert len(train) + len(val) == 1797 and len(val) == 359
    assert train[0][0].size == (8, 8) and train[0][0].mode == 'RGB'
    assert {label for _, label in train} == set(range(10))
    assert set(map(id, (img for img, _ in train))).isdisjoint(map(id, (img for img, _ in val)))


def test_demo_tiny_run_prints_both_models_and_writes_png(tmp_path, capsys):
    out = tmp_path / 'curves.png'
    assert main(['demo', '--epochs', '2', '--limit', '120', '--batch-size', '32', '--out', str(out),
                 '--model-kwargs', 'depth=1']) == 0
    text = capsys.readouterr().out
    assert 'SL top-1' in text and 'baseline top-1' in text
    summary = text[text.index('best top-1'):]
    assert 'SL' in summary and 'baseline' in summary and 'spt=False lsa=False' in summary
    epoch_rows = [line.split() for line in text.splitlines() if line.split()[:1] in (['1'], ['2'])]
    assert len(epoch_rows) == 2 and all(0. <= float(v) <= 100. for row in epoch_rows for v in row[1:3])
    img = Image.open(out)
    assert img.size == (720, 460) and len(img.getcolors(1 << 16)) > 4  # axes, two curves, text


def test_plot_curves_draws_each_series(tmp_path):
    path = tmp_path / 'p.png'
    plot_curves({'a': [10., 50., 90.], 'b': [5., 5., 5.]}, str(path), title='t')
    img = Image.open(path).convert('RGB')
    colors = {c for _, c in img.getcolors(1 << 16)}
    assert (214, 39, 40) in colors and (31, 119, 180) in colors


def test_demo_rejects_bad_epochs(capsys):
    with pytest.raises(SystemExit):
        main(['demo', '--epochs', '0'])
    assert 'expected an integer >= 1' in capsys.readouterr().err

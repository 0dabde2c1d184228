import io

import pytest

import timm_sl.tools.plot
from timm_sl.tools.cli import main
from timm_sl.tools.demo import load_digits_split, run_demo

pytest.importorskip('sklearn')

TINY = dict(epochs=1, batch_size=16, limit=40, model_kwargs=dict(depth=1, embed_dim=48, num_heads=2))


def test_digits_split_is_real_and_disjoint():
    train, val = load_digits_split(val_fraction=0.2)
    assert len(train) + len(val) == 1797 and len(val) == 359
    assert train[0][0].size == (8, 8) and train[0][0].mode == 'RGB'
    assert {label for _, label in train} == set(range(10))
    assert set(map(id, (img for img, _ in train))).isdisjoint(map(id, (img for img, _ in val)))


@pytest.mark.parametrize('limit', [20, 40, 100, None])
def test_digits_split_is_stratified(limit):
    train, val = load_digits_split(val_fraction=0.2, limit=limit)
    train_labels, val_labels = [label for _, label in train], [label for _, label in val]
    assert set(train_labels) == set(range(10))  # every digit is trained on, even with --limit 20
    per_digit = [val_labels.count(digit) for digit in range(10)]
    assert max(per_digit) - min(per_digit) <= 1  # the validation split holds each digit equally often (or distinct)
    if limit is not None:
        counts = [(train_labels + val_labels).count(digit) for digit in range(10)]
        assert max(counts) - min(counts) <= 1


def _numbers(results):
    return [(r.top1, r.train_loss, r.params) for r in results]


def test_demo_seed_repeats_and_plain_progress_off_a_terminal():
    log = io.StringIO()  # not a terminal: one plain line per run and epoch, no carriage returns
    first = run_demo('sl_vit_32', seed=0, stream=log, **TINY)
    again = run_demo('sl_vit_32', seed=0, stream=io.StringIO(), **TINY)
    other = run_demo('sl_vit_32', seed=1, stream=io.StringIO(), **TINY)
    assert _numbers(first) == _numbers(again)  # timm's random crop draws from python's random: seeded too
    assert [r.train_loss for r in first] != [r.train_loss for r in other]
    lines = log.getvalue().splitlines()
    assert '\r' not in log.getvalue() and len(lines) == 2
    assert lines[0].startswith('SL seed 0 epoch 1 of 1: train loss ') and ', val top-1 ' in lines[0]
    assert lines[1].startswith('baseline seed 0 epoch 1 of 1: train loss ')  # epochs from 1, as everywhere shown


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_demo_progress_bar_on_a_terminal():
    term = _Terminal()
    run_demo('sl_vit_32', stream=term, **TINY)
    text = term.getvalue()
    assert '\r' in text and 'SL seed 0' in text and 'baseline seed 0' in text and 'step' in text
    assert 'train loss' not in text  # the plain per-epoch lines are only for logs


def test_demo_cli_prints_both_models_and_draws_the_curves(tmp_path, capsys, monkeypatch):
    figures = []
    draw = timm_sl.tools.plot.plot_curves
    monkeypatch.setattr(timm_sl.tools.plot, 'plot_curves', lambda *a, **k: figures.append(draw(*a, **k)))
    out = tmp_path / 'curves.png'
    assert main(['demo', '--epochs', '2', '--limit', '60', '--batch-size', '32', '--out', str(out),
                 '--model-kwargs', 'depth=1', '--seed', '3']) == 0
    text = capsys.readouterr().out
    assert 'SL top-1' in text and 'baseline top-1' in text
    summary = text[text.index('best top-1'):]
    assert 'SL' in summary and 'baseline' in summary and 'spt=False lsa=False' in summary
    epoch_rows = [line.split() for line in text.splitlines() if line.split()[:1] in (['1'], ['2'])]
    assert len(epoch_rows) == 2 and all(0. <= float(v) <= 100. for row in epoch_rows for v in row[1:3])
    ax = figures[0].axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        'SL (sl_vit_32, depth=1)', 'baseline (sl_vit_32, depth=1, spt/lsa off)']
    assert [list(line.get_ydata()) for line in ax.get_lines()] == [
        pytest.approx([float(row[1]) for row in epoch_rows], abs=0.006),
        pytest.approx([float(row[2]) for row in epoch_rows], abs=0.006)]
    # 60 images: 12 validation images, each 8.33 points of top-1: the chart says so, as the terminal does
    assert ax.get_title() == ('sl_vit_32, depth=1, SL vs baseline on digits, trained from scratch (seed 3); top-1 '
                              'of 12 validation images, 8.33 points each: a smoke test')
    assert out.stat().st_size > 0
    # epochs as the report and the cards count them: from 1, in the table and on the axis
    assert '2 epochs (counted from 1)' in text
    assert [list(line.get_xdata()) for line in ax.get_lines()] == [[1, 2]] * 2
    assert ax.get_xlabel() == 'epoch'  # the demo runs no train.py: nothing to compare the count with


def test_demo_chart_of_several_seeds_says_it_draws_their_mean(tmp_path, capsys, monkeypatch):
    figures = []
    draw = timm_sl.tools.plot.plot_curves
    monkeypatch.setattr(timm_sl.tools.plot, 'plot_curves', lambda *a, **k: figures.append(draw(*a, **k)))
    assert main(['demo', '--epochs', '1', '--limit', '40', '--batch-size', '32', '--out', str(tmp_path / 'c.png'),
                 '--model-kwargs', 'depth=1', '--seeds', '2', '--seed', '5']) == 0
    capsys.readouterr()
    assert figures[0].axes[0].get_title() == (
        'sl_vit_32, depth=1, SL vs baseline on digits, trained from scratch (mean over 2 seeds, 5-6); top-1 of 8 '
        'validation images, 12.5 points each: a smoke test')


def test_demo_rejects_bad_epochs(capsys):
    with pytest.raises(SystemExit):
        main(['demo', '--epochs', '0'])
    assert 'expected an integer >= 1' in capsys.readouterr().err


def _demo_error(argv, capsys) -> str:
    limit = [] if '--limit' in argv else ['--limit', '40']
    with pytest.raises(SystemExit) as info:
        main(['demo', '--epochs', '1', *limit, '--batch-size', '16'] + argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count('\n') == 1 and 'Traceback' not in err, err
    return err.rstrip('\n')


def test_demo_refuses_kwargs_the_digits_cannot_take_in_one_line(capsys, tmp_path):
    out = ['--out', str(tmp_path / 'c.png')]
    assert _demo_error(['--model-kwargs', 'num_classes=3'] + out, capsys) == (
        'timm-sl demo: num_classes=3 is not allowed in the demo: the digits have 10 classes (the demo sets it)')
    assert _demo_error(['--model-kwargs', 'in_chans=2'] + out, capsys).startswith(
        'timm-sl demo: in_chans=2 is not allowed in the demo; allowed: 1 (grey digits) or 3')
    assert _demo_error(['--model-kwargs', 'spt=False', 'lsa=False'] + out, capsys) == (
        'timm-sl demo: --model-kwargs spt=False lsa=False make sl_vit_32 its own baseline (SPT and LSA off), so '
        'there is nothing to compare; allowed: kwargs that keep SPT or LSA on')
    assert _demo_error(['--limit', '5'] + out, capsys).startswith('timm-sl demo: --limit 5 is too few images')


@pytest.mark.parametrize('kwargs', [dict(in_chans=1), dict(img_size=48), dict(num_classes=10)])
def test_demo_trains_other_sizes_and_grey(kwargs):
    sl, base = run_demo('sl_vit_32', stream=io.StringIO(), **dict(TINY, model_kwargs={**TINY['model_kwargs'],
                                                                                       **kwargs}))
    assert len(sl.top1[0]) == 1 and len(base.top1[0]) == 1 and sl.val_images == 8 and sl.train_images == 32


def test_demo_says_how_many_images_and_warns_on_a_small_validation_split(tmp_path, capsys):
    assert main(['demo', '--epochs', '1', '--limit', '40', '--batch-size', '16', '--model-kwargs', 'depth=1',
                 '--out', str(tmp_path / 'c.png')]) == 0
    captured = capsys.readouterr()
    assert '(32 training / 8 validation images, 8x8 upscaled), 1 epoch (counted from 1)' in captured.out
    assert 'warning: 8 validation image(s): each is 12.5 points of top-1' in captured.err


def _demo_without_training(monkeypatch, top1):
    """The demo command with both models' runs replaced by ``top1`` per epoch (1438 / 359 images); returns the list
    the charts it draws are appended to."""
    import timm_sl.tools.demo
    from timm_sl.tools.demo import DemoResult
    figures = []
    draw = timm_sl.tools.plot.plot_curves
    monkeypatch.setattr(timm_sl.tools.plot, 'plot_curves', lambda *a, **k: figures.append(draw(*a, **k)))
    from timm_sl.layers import with_switches

    def run_demo(model_name, label='SL', model_kwargs=None, **kwargs):  # each model's kwargs as run_demo gives them
        models = {label: model_kwargs or {}, 'baseline': with_switches(model_kwargs or {}, dict(spt=False, lsa=False))}
        return [DemoResult(name, model, top1=[list(top1)], train_loss=[[2.3] * len(top1)], train_img_s=[1.], params=1,
                           train_images=1438, val_images=359) for name, model in models.items()]
    monkeypatch.setattr(timm_sl.tools.demo, 'run_demo', run_demo)
    return figures


def test_demo_names_the_model_its_kwargs_make(tmp_path, capsys, monkeypatch):
    """README's ``demo --model-kwargs lsa_mask=False`` trains SPT + learned temperature without the mask (the paper's
    'ST'): table, chart and legend called it 'SL', and the chart named no kwargs."""
    figures = _demo_without_training(monkeypatch, [50., 60.])
    assert main(['demo', '--epochs', '2', '--model-kwargs', 'lsa_mask=False', 'depth=1',
                 '--out', str(tmp_path / 'c.png')]) == 0
    out = capsys.readouterr().out
    assert 'epoch  ST top-1  baseline top-1' in out and '\nST ' in out and '\nSL ' not in out
    ax = figures[0].axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        'ST (sl_vit_32, lsa_mask=False, depth=1)', 'baseline (sl_vit_32, depth=1, spt/lsa off)']
    assert ax.get_title().startswith('sl_vit_32, lsa_mask=False, depth=1, ST vs baseline on digits')


@pytest.mark.parametrize('kwargs,label', [(['lsa=False'], 'S'), (['spt=False'], 'L'),
                                          (['lsa_learn_temp=False'], 'SM')])
def test_demo_progress_lines_name_the_model_its_kwargs_make(kwargs, label, tmp_path, capsys, monkeypatch):
    """``demo --model-kwargs lsa=False`` (SPT only): table and chart said 'S', its progress lines 'SL seed 0 ...'."""
    import timm_sl.tools.demo
    log = io.StringIO()
    monkeypatch.setattr(timm_sl.tools.demo, 'run_demo', lambda *a, _run=run_demo, **k: _run(*a, **k, stream=log))
    assert main(['demo', '--epochs', '1', '--limit', '20', '--batch-size', '16', '--model-kwargs', 'depth=1',
                 'embed_dim=48', 'num_heads=2', *kwargs, '--out', str(tmp_path / 'c.png')]) == 0
    lines = log.getvalue().splitlines()
    assert lines[0].startswith(f'{label} seed 0 epoch 1 of 1: ') and lines[1].startswith('baseline seed 0 epoch 1')


def test_a_diverged_demo_run_is_refused_not_reported(tmp_path, capsys):
    """--lr 1e9: the loss went NaN and the table reported 'best top-1 0.00' for both models (the argmax of NaN
    logits), a number for a broken model, exit 0 and a chart."""
    out = tmp_path / 'c.png'
    with pytest.raises(SystemExit, match=r'^timm-sl demo: SL seed 0 diverged in epoch 2 of 2 \(train loss nan\), so '
                                         r'its top-1 would be a number for a broken model; allowed: a lower --lr '
                                         r'\(given: 1e\+09\)$'):
        main(['demo', '--epochs', '2', '--limit', '20', '--batch-size', '16', '--lr', '1e9', '--model-kwargs',
              'depth=1', '--out', str(out)])
    assert not out.exists()


def test_demo_chart_of_an_untrained_model_keeps_top1_on_0_to_100(tmp_path, capsys, monkeypatch):
    """Both models at 0 % top-1: the chart's y axis ran from -0.055 to 0.055, negative top-1 on its ticks."""
    figures = _demo_without_training(monkeypatch, [0., 0.])
    assert main(['demo', '--epochs', '2', '--out', str(tmp_path / 'c.png')]) == 0
    capsys.readouterr()
    ax = figures[0].axes[0]
    assert ax.get_ylim() == (0., 100.)
    assert ax.get_title().endswith('(seed 0); top-1 of 359 validation images')  # enough images: no smoke-test note
    ax.figure.canvas.draw()
    ticks = [float(t.get_text().replace('\u2212', '-')) for t in ax.get_yticklabels()
             if 0. <= t.get_position()[1] <= 100.]
    assert min(ticks) == 0. and max(ticks) == 100.


def test_demo_takes_an_spt_option_its_baseline_leaves_unused():
    """--model-kwargs shift_ratio=0.25 went to the baseline (SPT off) too, which the model refuses: it trains SL with
    the ratio and the baseline without."""
    from timm_sl.tools.demo.train import check_demo_kwargs
    assert check_demo_kwargs('sl_vit_32', dict(shift_ratio=0.25, depth=1)) == dict(spt=False, lsa=False)


@pytest.mark.parametrize('kwargs,label', [(dict(lsa_mask=True), 'M'), (dict(lsa_learn_temp=True), 'T')])
def test_the_demos_baseline_has_every_switch_off(kwargs, label):
    """--model-kwargs lsa_mask=True (or lsa_learn_temp=True) went to the baseline too, where it outlived lsa=False: the
    curve labelled 'baseline' was a masked (or learned-temperature) model, the paper's M (or T). The baseline has
    every switch off; the given one stays with the SL model."""
    from timm_sl.layers import with_switches, without_unused_options
    from timm_sl.tools.demo.train import check_demo_kwargs
    from timm_sl.tools.paper import switches_label
    baseline = with_switches(kwargs, check_demo_kwargs('sl_vit_32', dict(kwargs, depth=1)))
    assert baseline == dict(spt=False, lsa=False) and switches_label(baseline) == 'baseline'
    assert switches_label({**kwargs, 'spt': False, 'lsa': False}) == label  # what it trained as before
    assert check_demo_kwargs('sl_vit_32', dict(kwargs, spt=False, lsa=False, depth=1)) == dict(spt=False, lsa=False)
    assert without_unused_options(baseline) == baseline


def test_the_demos_mean_and_std_are_those_of_the_images_it_trains_on():
    """The demo normalized with mean 0.209 / std 0.318, said to be measured on the upscaled digits, whose pixels have
    mean 0.309 / std 0.349 (at 32 px, the default models' size; 16 and 64 px alike): its inputs were not centred."""
    import numpy as np
    from PIL import Image
    from timm_sl.tools.demo.digits import DIGITS_MEAN, DIGITS_STD
    train, val = load_digits_split(val_fraction=0.2)
    for size in (16, 32, 64):
        pixels = np.stack([np.asarray(img.resize((size, size), Image.BICUBIC)) for img, _ in train + val]) / 255.
        assert pixels.shape[-1] == 3 and len(pixels) == 1797
        assert pixels.mean(axis=(0, 1, 2)) == pytest.approx(DIGITS_MEAN, abs=0.002)
        assert pixels.std(axis=(0, 1, 2)) == pytest.approx(DIGITS_STD, abs=0.002)


def test_demo_legend_names_every_switch_the_baseline_turns_off(tmp_path, capsys, monkeypatch):
    """``demo --model sl_pit_32``: the table's baseline row said 'spt=False lsa=False spt_pool=False', its legend only
    'spt/lsa off', as if the baseline kept SPT's pooling layers; the legend now names the pooling switch too."""
    import timm_sl.tools.demo
    from timm_sl.tools.demo import DemoResult
    figures = []
    draw = timm_sl.tools.plot.plot_curves
    monkeypatch.setattr(timm_sl.tools.plot, 'plot_curves', lambda *a, **k: figures.append(draw(*a, **k)))

    def run_demo(model_name, label='SL', model_kwargs=None, **kwargs):
        models = {label: {}, 'baseline': dict(spt=False, lsa=False, spt_pool=False)}  # sl_pit_32's baseline_kwargs
        return [DemoResult(name, model, top1=[[50.]], train_loss=[[2.3]], train_img_s=[1.], params=1,
                           train_images=1438, val_images=359) for name, model in models.items()]
    monkeypatch.setattr(timm_sl.tools.demo, 'run_demo', run_demo)
    assert main(['demo', '--model', 'sl_pit_32', '--epochs', '1', '--out', str(tmp_path / 'c.png')]) == 0
    assert 'spt=False lsa=False spt_pool=False' in capsys.readouterr().out
    assert [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()] == [
        'SL (sl_pit_32)', 'baseline (sl_pit_32, spt/lsa/spt_pool off)']

import sys

import numpy as np
import pytest

from timm_sl.tools.plot import plot_attention, plot_curves, plot_ratios, require_matplotlib

pytest.importorskip('matplotlib')


def _y_ticks(ax):
    """(location, label text) of the y ticks inside the view, as drawn."""
    ax.figure.canvas.draw()
    low, high = ax.get_ylim()
    return [(t.get_position()[1], t.get_text().replace('\u2212', '-')) for t in ax.get_yticklabels()
            if low <= t.get_position()[1] <= high]


def test_curve_ticks_show_the_real_values_of_a_narrow_range(tmp_path):
    kl = {'SL': [0.01831, 0.01839, 0.01857, 0.01823], 'baseline': [0.01835, 0.01836, 0.01840, 0.01829]}
    fig = plot_curves(kl, str(tmp_path / 'kld.png'), y_label='mean KL (nats)', x_label='depth')
    ticks = _y_ticks(fig.axes[0])
    labels = [text for _, text in ticks]
    assert len(ticks) >= 3 and len(set(labels)) == len(labels)  # the Pillow chart printed 0.0 on every tick
    for location, text in ticks:  # no offset or multiplier: each label is its tick's value
        assert float(text) == pytest.approx(location, rel=1e-9, abs=1e-12)
    values = [v for ys in kl.values() for v in ys]
    low, high = fig.axes[0].get_ylim()
    assert low <= min(values) and max(values) <= high and high - low < 0.001  # the axis spans the data, not 0..max
    assert ticks[0][0] <= min(values) + 0.0001 and ticks[-1][0] >= max(values) - 0.0001
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ['1', '2', '3', '4']
    assert (tmp_path / 'kld.png').stat().st_size > 0


def test_curve_legend_is_off_the_data_and_coinciding_series_stay_visible(tmp_path):
    temps = {name: [0.25] * 9 for name in ('learned', 'min head', 'max head', 'fixed')}
    fig = plot_curves(temps, str(tmp_path / 't.png'), title='sl_vit_32, RANDOM INIT: temperature')
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend, axes_box = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
    assert legend.x0 >= axes_box.x1  # beside the axes, never over a series
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(temps)
    lines = ax.get_lines()
    assert len({(line.get_marker(), line.get_linestyle()) for line in lines}) == 4
    sizes = [line.get_markersize() for line in lines]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 4  # nested markers, each one visible
    assert ax.get_title() == 'sl_vit_32, RANDOM INIT: temperature'
    low, high = ax.get_ylim()
    assert low < 0.25 < high


def test_attention_maps_share_one_colour_scale_with_a_colour_bar(tmp_path):
    images = [np.full((32, 32, 3), 120, np.uint8), np.zeros((32, 32, 3), np.uint8)]
    uniform = np.full((8, 8), 1 / 64)
    near_uniform = uniform + np.linspace(-1e-4, 1e-4, 64).reshape(8, 8)
    sharp = np.zeros((8, 8))
    sharp[2, 3] = 0.7
    sharp[5, 5] = 0.3
    columns = {'SL': [sharp, near_uniform], 'baseline': [uniform, uniform]}
    fig = plot_attention(images, columns, str(tmp_path / 'a.png'), title='m, RANDOM INIT: final attention map',
                         notes=['SL: class token'])
    panels = [ax for ax in fig.axes if ax.get_images()]
    overlays = [ax.get_images()[-1] for ax in panels if len(ax.get_images()) == 2]
    assert len(overlays) == 4  # 2 images x 2 columns; the input column has no overlay
    assert {im.get_clim() for im in overlays} == {(0., 0.7)}  # one scale: 0 to the largest weight of any map
    near = overlays[1].norm(overlays[1].get_array())  # the near-uniform map: flat, not stretched to full range
    assert float(near.max() - near.min()) < 0.001
    bars = [ax for ax in fig.axes if 'shared scale' in ax.get_ylabel()]
    assert len(bars) == 1 and 'uniform = 0.01562' in bars[0].get_ylabel()
    assert fig.get_suptitle() == 'm, RANDOM INIT: final attention map'
    assert [ax.get_title() for ax in panels[:3]] == ['input', 'SL', 'baseline']
    width, height = fig.get_size_inches() * fig.dpi
    assert width >= 3 * 300 and height >= 2 * 300  # 3 in (300 px) per panel


def test_ratio_bars(tmp_path):
    fig = plot_ratios(['a', 'b'], [0.8, 0.5], [0.7, 0.45], [0.9, 0.6], [0.95, 0.9], str(tmp_path / 'r.png'))
    ax = fig.axes[0]
    assert [round(p.get_width(), 6) for p in ax.patches] == [0.8, 0.5]
    assert [t.get_text() for t in ax.get_yticklabels()] == ['a', 'b']
    assert (tmp_path / 'r.png').exists()


def test_missing_matplotlib_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)  # import matplotlib now raises ImportError
    with pytest.raises(ImportError, match=r'^the charts need matplotlib, which is not installed: '
                                          r'pip install "timm-sl\[demo\]"$'):
        require_matplotlib()
    with pytest.raises(ImportError, match='timm-sl'):
        plot_curves({'a': [1.]}, str(tmp_path / 'x.png'))


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize('images,heads', [(1, 1), (1, 3), (3, 1)])
def test_attention_figure_texts_stay_inside_and_apart(tmp_path, images, heads):
    """The one-model figure of ``timm-sl attention``: the colour-bar label is whole (it was cut at both ends) and the
    title keeps off the colour bar and its label (they ran into each other)."""
    maps = [np.full((8, 8), 1 / 64)] * images
    columns = {f'SL h{i}' if heads > 1 else 'SL': maps for i in range(heads)}
    fig = plot_attention([np.zeros((32, 32, 3), np.uint8)] * images, columns, str(tmp_path / 'a.png'),
                         title='sl_vit_32, RANDOM INIT (untrained: no --checkpoint/--pretrained): final attention map '
                               '(class token)',
                         notes=['SL: attention of the class token over the patch tokens in blocks.8.attn (the last '
                                'LocalitySelfAttention) (heads averaged)'])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    figure_box = fig.bbox.padded(-1)  # a pixel of slack for antialiasing
    bar = next(ax for ax in fig.axes if 'shared scale' in ax.get_ylabel())
    texts = {'title': fig._suptitle, 'notes': fig._supxlabel, 'colour-bar label': bar.yaxis.label}
    texts.update({f'panel title {ax.get_title()}': ax.title for ax in fig.axes if ax.get_title()})
    boxes = {name: text.get_window_extent(renderer) for name, text in texts.items()}
    for name, box in boxes.items():
        assert figure_box.contains(box.x0, box.y0) and figure_box.contains(box.x1, box.y1), (name, box, fig.bbox)
    assert not _overlap(boxes['title'], bar.get_window_extent(renderer))
    assert not _overlap(boxes['title'], boxes['colour-bar label'])
    assert 'uniform = 0.01562' in bar.get_ylabel().replace('\n', ' ')
    assert fig.get_suptitle().replace('\n', ' ') == (
        'sl_vit_32, RANDOM INIT (untrained: no --checkpoint/--pretrained): final attention map (class token)')

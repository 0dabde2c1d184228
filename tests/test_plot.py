import math
import sys

import numpy as np
import pytest

from timm_sl.tools.plot import INPUT_LABEL, MAP_LABEL, plot_attention, plot_curves, plot_ratios, require_matplotlib

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


def test_curves_over_epochs_count_from_one_and_say_so(tmp_path):
    from timm_sl.tools.plot import EPOCH_AXIS
    fig = plot_curves({'SL': [10., 20., 30.]}, str(tmp_path / 'e.png'), x_label=EPOCH_AXIS, x_start=1)
    ax = fig.axes[0]
    assert list(ax.get_lines()[0].get_xdata()) == [1, 2, 3]
    assert [t.get_text() for t in ax.get_xticklabels()] == ['1', '2', '3']
    assert ax.get_xlabel() == "epoch (from 1; train.py's summary.csv counts from 0)"


def test_many_depths_get_no_tick_where_there_is_no_depth(tmp_path):
    """CaiT's 26 depths: the x-axis had ticks at 0 and 27, depths that do not exist."""
    fig = plot_curves({'SL': [float(i) for i in range(26)]}, str(tmp_path / 'k.png'), x_label='depth', x_start=1)
    ax = fig.axes[0]
    low, high = ax.get_xlim()
    shown = [t for t in ax.get_xticks() if low <= t <= high]
    assert shown and min(shown) >= 1 and max(shown) <= 26


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
                         notes=['SL: class token'], uniform={'SL': 1 / 64})
    panels = [ax for ax in fig.axes if ax.get_images()]
    overlays = [im for ax in panels for im in ax.get_images() if im.get_label() == MAP_LABEL]
    assert len(overlays) == 4  # 2 images x 2 columns; the input column has no map
    assert {im.get_clim() for im in overlays} == {(0., 0.7)}  # one scale: 0 to the largest weight of any map
    near = overlays[1].norm(overlays[1].get_array())  # the near-uniform map: flat, not stretched to full range
    assert float(near.max() - near.min()) < 0.001
    bars = [ax for ax in fig.axes if 'shared scale' in ax.get_ylabel()]
    assert len(bars) == 1 and 'uniform, SL 1/64 = 0.01562' in bars[0].get_ylabel()
    assert fig.get_suptitle() == 'm, RANDOM INIT: final attention map'
    assert [ax.get_title() for ax in panels[:3]] == ['input', 'SL', 'baseline']
    width, height = fig.get_size_inches() * fig.dpi
    assert width >= 3 * 300 and height >= 2 * 300  # 3 in (300 px) per panel


def test_a_nan_map_keeps_the_colour_scale_of_the_others(tmp_path):
    """One NaN cell (a diverged model) made the shared scale NaN: matplotlib drew a -0.1..0.1 colour bar (negative
    attention weights) and every map as one flat colour."""
    sharp = np.full((8, 8), 0.01)
    sharp[2, 3] = 0.37
    broken = np.full((8, 8), 1 / 64)
    broken[0, 0] = np.nan
    fig = plot_attention([np.zeros((32, 32, 3), np.uint8)], {'SL': [broken], 'baseline': [sharp]},
                         str(tmp_path / 'a.png'), uniform={'SL': 1 / 64})
    overlays = [im for ax in fig.axes for im in ax.get_images() if im.get_label() == MAP_LABEL]
    assert {im.get_clim() for im in overlays} == {(0., 0.37)}
    assert plot_attention([np.zeros((32, 32, 3), np.uint8)], {'SL': [np.full((8, 8), np.nan)]},
                          str(tmp_path / 'b.png')).axes[1].get_images()[0].get_clim() == (0., 1.)


def test_ratio_bars(tmp_path):
    fig = plot_ratios(['a', 'b'], [0.8, 0.5], [0.7, 0.45], [0.9, 0.6], [0.95, 0.9], str(tmp_path / 'r.png'))
    ax = fig.axes[0]
    assert [round(p.get_width(), 6) for p in ax.patches] == [0.8, 0.5]
    assert [t.get_text() for t in ax.get_yticklabels()] == ['a', 'b']
    assert (tmp_path / 'r.png').exists()
    # the markers are base / SL MACs (0.987 for sl_vit_32's 187.7 / 190.1), on an axis of ratios to the baseline: a
    # legend 'MACs ratio' read as SL / base MACs (1.013), the other side of 1; 'SL MACs' misnamed the sl_no_spool and
    # slify rows, whose marker is the baseline's MACs over their own
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()][0] == "baseline MACs / the row's MACs (what MACs alone predict)"
    box, page = legend.get_window_extent(fig.canvas.get_renderer()), fig.bbox  # two entries side by side were cut
    assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0  # off at the right edge of the chart


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
                                'LocalitySelfAttention) (heads averaged)'], uniform={'SL': 1 / 64})
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
    assert 'uniform, SL 1/64 = 0.01562' in bar.get_ylabel().replace('\n', ' ')
    assert fig.get_suptitle().replace('\n', ' ') == (
        'sl_vit_32, RANDOM INIT (untrained: no --checkpoint/--pretrained): final attention map (class token)')


def _colour_bar(fig):
    return next(ax for ax in fig.axes if 'shared scale' in ax.get_ylabel())


def test_attention_uniform_levels_are_the_given_ones_not_the_mean_of_the_maps(tmp_path):
    """The dashed "uniform" line was the mean weight of all maps: neither 1/64 (SL: the class token's own key masked)
    nor 1/65 (baseline: 65 keys). Each level given is drawn and named; none is made up."""
    sharp = np.zeros((8, 8))
    sharp[2, 3] = 0.9  # a map summing to 0.9: its mean is 0.0141, not a uniform level
    images = [np.zeros((32, 32, 3), np.uint8)]
    fig = plot_attention(images, {'SL': [sharp], 'baseline': [sharp]}, str(tmp_path / 'a.png'),
                         uniform={'SL': 1 / 64, 'baseline': 1 / 65})
    bar = _colour_bar(fig)
    levels = [line.get_ydata()[0] for line in bar.get_lines()]
    assert levels == pytest.approx([1 / 64, 1 / 64, 1 / 65, 1 / 65])  # each a white line under a black one
    assert [line.get_linestyle() for line in bar.get_lines()][1::2] == ['--', ':']
    label = bar.get_ylabel().replace('\n', ' ')
    assert 'dashed: uniform, SL 1/64 = 0.01562' in label and 'dotted: uniform, baseline 1/65 = 0.01538' in label
    fig = plot_attention(images, {'SL': [sharp]}, str(tmp_path / 'b.png'))
    assert _colour_bar(fig).get_lines() == [] and 'uniform' not in _colour_bar(fig).get_ylabel()
    flat = np.full((8, 8), 0.01)  # every weight below the uniform level: the scale reaches up to it
    fig = plot_attention(images, {'SL': [flat]}, str(tmp_path / 'c.png'), uniform={'SL': 1 / 64})
    assert _colour_bar(fig).get_ylim() == pytest.approx((0, 1 / 64))


def test_attention_rows_name_their_images(tmp_path):
    images = [np.zeros((32, 32, 3), np.uint8)] * 2
    fig = plot_attention(images, {'SL': [np.ones((8, 8))] * 2}, str(tmp_path / 'a.png'),
                         row_labels=['cat.png', 'dog.png'])
    inputs = [ax for ax in fig.axes if [im.get_label() for im in ax.get_images()] == [INPUT_LABEL]]
    assert [ax.get_ylabel() for ax in inputs] == ['cat.png', 'dog.png']


def test_attention_per_head_panels_wrap_into_a_grid(tmp_path):
    """``--heads all`` put the input and 12 heads in one row, 4020 px wide; wrapped: rows of 5, 5 and 3 panels per
    image, each titled and each row named by its image."""
    images = [np.zeros((32, 32, 3), np.uint8)] * 2
    columns = {f'SL h{i}': [np.full((8, 8), 1 / 64)] * 2 for i in range(12)}
    fig = plot_attention(images, columns, str(tmp_path / 'a.png'), row_labels=['cat.png', 'dog.png'])
    width, height = fig.get_size_inches() * fig.dpi
    assert width <= 6 * 300 + 120 and height >= 6 * 300  # at most 6 panels (300 px) a row; 3 rows per image
    panels = [ax for ax in fig.axes if ax.get_images()]
    assert len(panels) == 2 * 13
    assert [ax.get_title() for ax in panels] == (['input'] + list(columns)) * 2
    columns_x = sorted({round(ax.get_position().x0, 3) for ax in panels})
    rows_y = sorted({round(ax.get_position().y0, 3) for ax in panels}, reverse=True)
    assert len(columns_x) == 5 and len(rows_y) == 6
    names = [ax.get_ylabel() for ax in sorted(panels, key=lambda a: (-a.get_position().y0, a.get_position().x0))
             if round(ax.get_position().x0, 3) == columns_x[0]]
    assert names == ['cat.png'] * 3 + ['dog.png'] * 3


def _pixel(fig, ax, x, y):
    """RGB (0..1) of the rendered figure at data point ``(x, y)`` of ``ax``."""
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())
    px, py = ax.transData.transform((x, y))
    return pixels[int(round(pixels.shape[0] - py)), int(round(px)), :3] / 255.


def test_attention_map_colours_are_the_colour_bars(tmp_path):
    """The map was blended (alpha 0.7) over the grey image: a cell's colour then depended on the pixels under it and
    matched no colour of the bar. Each map is drawn opaque in its own panel: the colour a cell shows is the bar's
    colour for its weight, whatever the image (white or black) is."""
    import matplotlib
    grid = np.zeros((4, 4))
    grid[0, 0], grid[1, 2], grid[3, 3] = 0.6, 0.3, 0.1
    images = [np.full((32, 32, 3), 255, np.uint8), np.zeros((32, 32, 3), np.uint8)]
    fig = plot_attention(images, {'SL': [grid, grid]}, str(tmp_path / 'a.png'), uniform={'SL': 1 / 16})
    maps = [ax for ax in fig.axes if any(im.get_label() == MAP_LABEL for im in ax.get_images())]
    assert len(maps) == 2 and all(len(ax.get_images()) == 1 for ax in maps)  # nothing under the map
    bar = _colour_bar(fig)
    image = maps[0].get_images()[0]
    cmap, norm = image.get_cmap(), image.norm
    assert image.get_alpha() in (None, 1.)
    for ax in maps:  # white and black image: the same colours
        for (row, col) in ((0, 0), (1, 2), (3, 3), (2, 0)):
            x, y = (col + 0.5) * 8 - 0.5, (row + 0.5) * 8 - 0.5  # the cell's centre in image pixels
            expected = np.asarray(matplotlib.colors.to_rgb(cmap(norm(grid[row, col]))))
            assert _pixel(fig, ax, x, y) == pytest.approx(expected, abs=2 / 255), (row, col)
    assert bar.get_ylim() == pytest.approx((0., 0.6))  # the bar spans the same 0 .. largest weight


def test_curve_y_range_keeps_a_flat_curve_flat(tmp_path):
    """A KL curve that moves by 0.0003 filled the whole height (the axis spanned the data alone): from 0 it reads as
    flat, and the SL / baseline gap keeps its true proportion."""
    kl = {'SL': [0.01831, 0.01839, 0.01857, 0.01823], 'baseline': [0.00235, 0.00236, 0.00240, 0.00229]}
    fig = plot_curves(kl, str(tmp_path / 'k.png'), y_label='mean KL (nats)', x_label='depth', y_range=(0., None))
    low, high = fig.axes[0].get_ylim()
    assert low == 0. and 0.01857 < high <= 0.01857 * 1.1
    sl = kl['SL']
    assert (max(sl) - min(sl)) / (high - low) < 0.02  # the SL curve's wiggle: under 2 % of the height
    for _, text in _y_ticks(fig.axes[0]):
        assert float(text) >= 0.


def test_percent_curves_at_zero_stay_on_0_to_100(tmp_path):
    """An untrained model at 0 % top-1: the axis ran from -0.055 to 0.055 (negative top-1 on the ticks)."""
    fig = plot_curves({'SL': [0., 0.], 'baseline': [0., 0.]}, str(tmp_path / 'c.png'), y_range=(0., 100.))
    ax = fig.axes[0]
    assert ax.get_ylim() == (0., 100.)
    ticks = [float(text) for _, text in _y_ticks(ax)]
    assert min(ticks) == 0. and max(ticks) == 100. and all(t >= 0 for t in ticks)
    fig = plot_curves({'SL': [12.5, 37.5]}, str(tmp_path / 'd.png'), y_range=(0., 100.))
    assert fig.axes[0].get_ylim() == (0., 100.)  # 12.5 .. 37.5 is not stretched over the height either


def test_long_curve_labels_leave_the_axes_their_width(tmp_path):
    """``demo --model-kwargs depth=1 embed_dim=48 num_heads=2 lsa_mask=False``: the legend beside the axes took 5/6
    of the width, the axes a 150 px sliver and the title a column of nine lines."""
    given = 'sl_vit_32, depth=1, embed_dim=48, num_heads=2, lsa_mask=False'
    fig = plot_curves({f'ST ({given})': [0., 10.], f'baseline ({given}, spt/lsa off)': [0., 20.]},
                      str(tmp_path / 'c.png'), title=f'{given}, ST vs baseline on digits', y_range=(0., 100.))
    ax = fig.axes[0]
    fig.canvas.draw()
    axes, legend = ax.get_window_extent(), ax.get_legend().get_window_extent()
    assert axes.width > 0.75 * fig.bbox.width and legend.y1 < axes.y0  # the legend below the axes, not beside
    short = plot_curves({'SL': [0., 10.], 'baseline': [0., 20.]}, str(tmp_path / 'd.png'))
    short.canvas.draw()
    assert short.axes[0].get_legend().get_window_extent().x0 > short.axes[0].get_window_extent().x1  # beside


@pytest.mark.parametrize('draw', [
    lambda path: plot_curves({'SL': [1., 2.]}, path),
    lambda path: plot_ratios(['a'], [1.], [0.9], [1.1], [1.], path),
    lambda path: plot_attention([np.zeros((4, 4, 3), dtype=np.uint8)], {'SL': [[[0.5, 0.5]]]}, path),
], ids=['curves', 'ratios', 'attention'])
def test_a_chart_save_cut_short_leaves_the_earlier_chart_whole(tmp_path, monkeypatch, draw):
    """A save that failed half-way (a full disk, the process killed) truncated the earlier good chart at --out: every
    chart is written beside it and moved over it, also where --out is a link (the file it points to is kept whole)."""
    from matplotlib.figure import Figure
    kept = tmp_path / 'kept'
    kept.mkdir()
    (kept / 'chart.png').write_bytes(b'an earlier chart')
    (tmp_path / 'link.png').symlink_to(kept / 'chart.png')
    save = Figure.savefig

    def cut_short(fig, file, *args, **kwargs):
        with open(file, 'wb') as f:
            f.write(b'half')
        raise OSError(28, 'No space left on device')
    for path in kept / 'chart.png', tmp_path / 'link.png':
        monkeypatch.setattr(Figure, 'savefig', cut_short)
        with pytest.raises(OSError, match=f'No space left on device: .{path}.$') as info:
            draw(str(path))
        assert info.value.filename == str(path)
        assert (kept / 'chart.png').read_bytes() == b'an earlier chart' and (tmp_path / 'link.png').is_symlink()
        assert sorted(p.name for p in kept.iterdir()) == ['chart.png']  # no partial file left beside it
        monkeypatch.setattr(Figure, 'savefig', save)
        draw(str(path))  # and a save that succeeds replaces it, through the link too
        assert (kept / 'chart.png').read_bytes()[:4] == b'\x89PNG' and (tmp_path / 'link.png').is_symlink()
        (kept / 'chart.png').write_bytes(b'an earlier chart')


def test_throughput_plot_keeps_a_users_file_and_checks_before_measuring(tmp_path, capsys):
    """``benchmarks/throughput.py --plot ratios.png`` replaced any file of that name, after the whole measurement;
    a missing folder was found only then."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[1] / 'benchmarks'))
    from throughput import parse_args
    mine = tmp_path / 'ratios.png'
    mine.write_bytes(b'my own picture')
    for plot, error in ((mine, f"--plot {mine} is a file timm-sl did not draw (no 'timm-sl chart' mark): it is kept"),
                        (tmp_path / 'no' / 'r.png', f"--plot: {tmp_path / 'no' / 'r.png'}: folder {tmp_path / 'no'} "
                                                    f"does not exist, where a chart file goes; create it first"),
                        # after the whole measurement: matplotlib's "Format 'txt' is not supported" traceback
                        (tmp_path / 'r.txt', f"--plot: {str(tmp_path / 'r.txt')!r} has extension '.txt'; allowed: "
                                             f".png, .jpg, .jpeg, .pdf, .svg")):
        with pytest.raises(SystemExit):
            parse_args(['--plot', str(plot)])
        assert error in capsys.readouterr().err
    assert mine.read_bytes() == b'my own picture'
    assert parse_args(['--plot', str(mine), '--overwrite']).overwrite
    # -b 0 / --iters 0 reported 0.0 img/s and a ratio (0.29) for nothing timed; --repeats 0 / --img-size 0 tracebacks
    for option in ('--batch-size', '--iters', '--repeats', '--img-size', '--threads'):
        with pytest.raises(SystemExit):
            parse_args([option, '0'])
        assert capsys.readouterr().err.splitlines()[-1].endswith(f'{option}: 0 is not allowed; expected an integer '
                                                                 f'>= 1')


def test_throughput_checks_its_options_without_the_timm_sl_command(tmp_path, capsys, monkeypatch):
    """benchmarks/throughput.py took ``figure_path`` and ``positive_int`` from the ``timm-sl`` command's module; they
    live beside the charts and the other option types, with the same one-line messages."""
    import argparse
    import sys
    from pathlib import Path
    from timm_sl.tools.arg_types import positive_int
    from timm_sl.tools.plot import figure_path
    with pytest.raises(argparse.ArgumentTypeError, match="^'x' is not allowed; expected an integer >= 1$"):
        positive_int('x')
    with pytest.raises(argparse.ArgumentTypeError, match=f"^{str(tmp_path)!r} is a folder; allowed: a chart file name"):
        figure_path(str(tmp_path))
    monkeypatch.setitem(sys.modules, 'timm_sl.tools.cli', None)  # an import of the command's module fails
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / 'benchmarks'))
    monkeypatch.delitem(sys.modules, 'throughput', raising=False)
    from throughput import parse_args
    assert parse_args(['--plot', str(tmp_path / 'r.png'), '-b', '3']).batch_size == 3
    with pytest.raises(SystemExit):
        parse_args(['--iters', '0'])
    assert capsys.readouterr().err.splitlines()[-1].endswith('--iters: 0 is not allowed; expected an integer >= 1')


def test_a_chart_names_a_run_folder_as_its_text_under_a_latin1_locale(tmp_path, monkeypatch):
    """Under a Latin-1 locale the run folder 'runé' is read as 'runÃ©': the kld / temperature / attention charts'
    titles named 'runÃ©/model_best.pth.tar'. Every chart's texts now name 'runé'; 'SL − baseline' stays itself."""
    from timm_sl.tools.plot import figure, save
    monkeypatch.setattr(sys, 'getfilesystemencoding', lambda: 'latin-1')
    fig = figure(2, 2)
    fig.suptitle('checkpoint run\xc3\xa9/model_best.pth.tar\nSL − baseline')
    fig.add_subplot().set_ylabel('caf\xc3\xa9.png')
    save(fig, str(tmp_path / 'chart.png'))
    assert (fig.get_suptitle(), fig.axes[0].get_ylabel()) == ('checkpoint runé/model_best.pth.tar\nSL − baseline',
                                                              'café.png')
    assert (tmp_path / 'chart.png').stat().st_size > 0


@pytest.mark.parametrize('draw', ['curves', 'ratios'])
def test_a_title_with_a_long_run_folder_stays_inside_the_figure(tmp_path, draw):
    """A checkpoint's run folder of 130 characters (no space to wrap at) ran off both edges of a temperature / kld
    chart: matplotlib's ``wrap=True`` breaks lines at spaces only, so the folder was unreadable."""
    title = f'sl_vit_32, depth=2, checkpoint run_{"x" * 130}/model_best.pth.tar: learned temperature per depth'
    out = str(tmp_path / 'c.png')
    fig = plot_curves({'a': [1., 2.]}, out, title=title) if draw == 'curves' else \
        plot_ratios(['sl_vit_32 sl infer'], [1.], [0.9], [1.1], [0.9], out, title=title)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    shown = fig.axes[0].title
    box, page = shown.get_window_extent(renderer), fig.bbox
    assert page.x0 <= box.x0 and box.x1 <= page.x1, (box, page)
    assert ''.join(shown._get_wrapped_text().split()) == ''.join(title.split())  # every character still there


@pytest.mark.parametrize('peak', [1e30, 1e300, 1e-7])
def test_curve_ticks_of_huge_or_tiny_values_stay_short_and_inside_the_figure(tmp_path, peak):
    """A checkpoint's finite but huge temperature (1e30) was labelled '199999999999999982866301714432' (float noise
    shown as digits) and 1e300 ran the labels and the y label off the figure; 1e-7 gave rows of '0.00000010'."""
    fig = plot_curves({'a': [peak, 2 * peak, 3 * peak]}, str(tmp_path / 'c.png'), y_range=(0., None))
    ax = fig.axes[0]
    ticks = _y_ticks(ax)
    scale = float(ax.yaxis.get_offset_text().get_text().replace('\u2212', '-') or 1)
    for location, text in ticks:
        assert len(text) <= 8 and float(text) * scale == pytest.approx(location, rel=1e-6, abs=1e-12 * peak)
    page, (low, high) = fig.bbox, ax.get_ylim()
    shown = [t for t in ax.get_yticklabels() if low <= t.get_position()[1] <= high]
    for text in [*shown, ax.yaxis.label, ax.yaxis.get_offset_text()]:
        box = text.get_window_extent()
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, (text, box)


_HOSTILE = (float('nan'), float('inf'), -float('inf'), -0., 0., 1e-300, 1e-7, 1e300, 1e30, -1., 50., 50., 100., 1e6)


def test_curves_of_hostile_values_at_random_keep_every_point_and_tick_true(monkeypatch):
    """Seeded fuzz of plot_curves (100 figures, not their files): 1-5 series of 1-30 values drawn from NaN, inf, -0.,
    1e-300, 1e300, equal values and ordinary ones. Every finite value lies inside finite y limits, a percentage axis
    stays on 0-100 unless a value is outside it, every series and floor has its legend entry, and every tick label is
    short and is its tick's value (times the multiplier over the axis): 1e300 got 300-digit labels."""
    import random
    from timm_sl.tools import plot
    monkeypatch.setattr(plot, 'save', lambda fig, path: None)
    for seed in range(100):
        r = random.Random(seed)
        steps = r.randint(1, 30)
        pick = (lambda: r.choice(_HOSTILE) if r.random() < 0.5 else r.uniform(-10., 110.))
        curves = {f'series {i}': [pick() for _ in range(steps)] for i in range(r.randint(1, 5))}
        floors = {name: [pick() for _ in ys] for name, ys in curves.items() if r.random() < 0.3}
        y_range = r.choice([(None, None), (0., 100.), (0., None)])
        fig = plot_curves(curves, 'unused.png', y_range=y_range, floors=floors or None)
        ax, case = fig.axes[0], (seed, curves, floors, y_range)
        low, high = ax.get_ylim()
        values = [v for ys in [*curves.values(), *floors.values()] for v in ys if math.isfinite(v)]
        assert math.isfinite(low) and math.isfinite(high), case
        assert all(low <= v <= high for v in values), case
        if y_range == (0., 100.) and values:
            assert min(0., min(values)) <= low <= 0. and 100. <= high <= max(100., max(values)) * 1.06 + 1e-9, case
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == list(curves) + [f'{name}: floor' for name in floors], case
        formatter = ax.yaxis.get_major_formatter()
        ticks = [t for t in ax.get_yticks() if low <= t <= high]
        texts = formatter.format_ticks(ticks)  # sets the multiplier over the axis ('1e300') for these ticks
        scale = float(formatter.get_offset().replace('\u2212', '-') or 1.)
        for tick, text in zip(ticks, texts):
            text = text.replace('\u2212', '-')
            assert len(text) <= 10 and float(text) * scale == pytest.approx(tick, rel=1e-6, abs=1e-9 * scale), case
        fig.clear()

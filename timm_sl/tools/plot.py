"""Charts with matplotlib (the ``[demo]`` extra): learning curves, throughput ratios and attention maps.

Every function builds a :class:`matplotlib.figure.Figure` on the Agg canvas (no pyplot, no global backend switch,
no display needed), saves it to ``path`` (the format follows the extension) and returns it, so callers and tests can
look at what was drawn. matplotlib is imported inside the functions: importing this module costs nothing.
"""
import argparse
import math
import os
import textwrap
from fractions import Fraction
from pathlib import Path
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

from .arg_types import check_file_place

__all__ = ['CHART_MARK', 'EPOCH_AXIS', 'INPUT_LABEL', 'MAP_LABEL', 'OUT_SUFFIXES', 'break_long_words',
           'check_chart_out', 'figure', 'figure_path', 'is_chart', 'is_marked', 'plot_attention', 'plot_curves',
           'plot_ratios', 'require_matplotlib', 'save', 'y_limits']

# file types the CLI accepts for --out (all written by matplotlib's Agg / vector backends)
LEGEND_BESIDE = 50  # characters: a longer curve label puts the legend below the axes, not beside them
OUT_SUFFIXES = ('.png', '.jpg', '.jpeg', '.pdf', '.svg')

# every chart over epochs counts them as the report and the cards do: from 1
EPOCH_AXIS = "epoch (from 1; train.py's summary.csv counts from 0)"

# labels of the images plot_attention draws: the input panels' and the maps'
INPUT_LABEL = 'input image'
MAP_LABEL = 'attention map'

Grid = Sequence[Sequence[float]]

_LINESTYLES = ('-', '--', '-.', ':')
_MARKERS = ('o', 's', '^', 'D', 'v', 'P')
_LEVEL_STYLES = (('--', 'dashed'), (':', 'dotted'), ('-.', 'dash-dot'), ((0, (5, 1, 1, 1, 1, 1)), 'dash-dot-dot'))


def require_matplotlib() -> None:
    """Raises:
        ImportError: matplotlib is not installed, with the install command (one line).
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        raise ImportError('the charts need matplotlib, which is not installed: pip install "timm-sl[demo]"') from e


def figure(width: float, height: float, dpi: int = 100):
    """A constrained-layout figure on its own Agg canvas."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=dpi, layout='constrained')
    FigureCanvasAgg(fig)
    return fig


CHART_MARK = 'timm-sl chart'  # in every chart file: never read back as an input image, the only file --out replaces
# how the mark reads in a PDF's and an SVG's metadata (``Creator``), near the file's end / start
_VECTOR_MARKS = {'.pdf': f'/Creator ({CHART_MARK})'.encode(), '.svg': f'<dc:title>{CHART_MARK}</dc:title>'.encode()}


def save(fig, path: str, before_replace: Optional[Callable[[Path], None]] = None) -> None:
    """``fig.savefig`` to ``path`` (the format its extension names) through
    :func:`~timm_sl.tools.errors.write_atomically` (``before_replace`` passed on): a save cut short leaves an earlier
    chart whole. Charts carry :data:`CHART_MARK` (PNG ``Software``, JPEG comment, PDF / SVG ``Creator``), which the
    analyses' image loader refuses and :func:`check_chart_out` looks for."""
    from matplotlib.text import Text
    from .errors import name_text, write_atomically
    for text in fig.findobj(Text):  # a run folder in a title under a Latin-1 locale: 'runé', not 'runÃ©'
        text.set_text(name_text(text.get_text()))
    fmt = Path(path).suffix[1:].lower() or None
    mark = dict(metadata={'Software': CHART_MARK}) if fmt == 'png' else \
        dict(pil_kwargs={'comment': CHART_MARK.encode()}) if fmt in ('jpg', 'jpeg') else \
        dict(metadata={'Creator': CHART_MARK}) if fmt in ('pdf', 'svg') else {}
    write_atomically(path, lambda file: fig.savefig(file, format=fmt, **mark), before_replace)


def is_marked(image) -> bool:
    """Whether an open PIL image is a chart timm-sl drew (:data:`CHART_MARK` in its PNG / JPEG metadata)."""
    comment = image.info.get('comment', b'')
    return CHART_MARK in (image.info.get('Software'), comment.decode('latin-1') if isinstance(comment, bytes) else
                          comment)


def is_chart(path: Path) -> bool:
    """Whether the regular file ``path`` is a chart timm-sl drew: :data:`CHART_MARK` where :func:`save` puts it for
    the format its extension names (a PNG / JPEG read with PIL; a PDF's last and an SVG's first 64 KiB)."""
    suffix = path.suffix.lower()
    if suffix in _VECTOR_MARKS:
        with open(path, 'rb') as f:
            head = f.read(1 << 16)
            f.seek(max(f.seek(0, 2) - (1 << 16), 0))
            return _VECTOR_MARKS[suffix] in head + f.read()
    from PIL import Image
    try:
        with Image.open(path) as image:
            return is_marked(image)
    except (OSError, ValueError, Image.DecompressionBombError):  # not an image PIL reads: not one of ours
        return False


def check_chart_out(path: str, overwrite: bool = False, option: str = '--out') -> None:
    """Refuse to draw a chart over anything but an earlier chart (:func:`is_chart`) or nothing: a user's photo,
    report or table at ``path`` (or where a link at ``path`` points) is kept, unless ``overwrite``. Something that is
    no regular file (a FIFO, a device) is refused even then: a chart cannot be written into it.

    Raises:
        ValueError: naming ``path`` (and ``option``), what is there and what is allowed.
    """
    given = Path(path)
    target = given.resolve() if given.is_symlink() else given
    from .errors import shown
    where = f'{option} {shown(path)}' + (f' (a link to {shown(target)})' if target != given else '')
    if not target.exists():
        return
    if not target.is_file():
        raise ValueError(f'{where} is not a regular file (a FIFO, socket or device): a chart cannot be written into '
                         f'it; allowed: a new file name, or a chart of an earlier timm-sl command')
    if not overwrite and not is_chart(target):
        raise ValueError(f'{where} is a file timm-sl did not draw (no {CHART_MARK!r} mark): it is kept; allowed: a '
                         f'new file name, a chart of an earlier timm-sl command, or --overwrite to replace it')


def figure_path(text: str) -> str:
    """``--out`` of a chart: a file (not a folder) with a known image extension, in a folder that exists and takes a
    new file (checked before any work). An existing chart file there is replaced, as re-running a command should."""
    path = Path(text)
    if os.path.isdir(text):  # not Path.is_dir: it raises for a name too long, which check_file_place refuses
        raise argparse.ArgumentTypeError(f'{text!r} is a folder; allowed: a chart file name ending in '
                                         f'{", ".join(OUT_SUFFIXES)}, e.g. {str(path / "chart.png")!r}')
    if path.suffix.lower() not in OUT_SUFFIXES:
        raise argparse.ArgumentTypeError(
            f'{text!r} has {"no file extension" if not path.suffix else f"extension {path.suffix!r}"}; '
            f'allowed: {", ".join(OUT_SUFFIXES)}')
    check_file_place(text, 'a chart file')
    return text


def break_long_words(text: str, width: int) -> str:
    """``text`` with a line break every ``width`` characters inside each word longer than that (a run folder's
    path): matplotlib's ``wrap=True`` breaks lines at spaces only, and a longer word ran off both edges."""
    return ' '.join('\n'.join(word[i:i + width] for i in range(0, len(word), width)) if len(word) > width else word
                    for word in text.split(' '))


def _plain_ticks(axis) -> None:
    """Tick labels that show the real values: no offset ("+1e-3"), and a multiplier ("1e7" over the axis) only for
    values of about 1e6 or more or all below about 1e-3 (matplotlib's power limits -4 and 6 on the axis' largest
    value), whose plain labels were 30 digits of float noise or a row of zeros."""
    from matplotlib.ticker import ScalarFormatter
    formatter = ScalarFormatter(useOffset=False)
    formatter.set_powerlimits((-4, 6))
    axis.set_major_formatter(formatter)


def y_limits(values: Sequence[float], low: Optional[float], high: Optional[float]) -> Tuple[float, float]:
    """The y range a curve chart shows: from ``low`` (or the data's minimum, if lower) to ``high`` (or the data's
    maximum, if higher); an open end (None) is the data's own plus a 5 % margin of the span."""
    finite = [v for v in values if math.isfinite(v)]
    data_low, data_high = (min(finite), max(finite)) if finite else (0., 1.)
    bottom = data_low if low is None else min(low, data_low)
    top = data_high if high is None else max(high, data_high)
    margin = 0.05 * (top - bottom) or 0.05 * abs(top) or 1.
    return bottom - (margin if low is None else 0.), top + (margin if high is None else 0.)


def plot_curves(
        curves: Dict[str, Sequence[float]],
        path: str,
        title: str = '',
        y_label: str = 'top-1 (%)',
        x_label: str = 'epoch',
        x_start: int = 1,
        y_range: Tuple[Optional[float], Optional[float]] = (None, None),
        floors: Optional[Mapping[str, Sequence[float]]] = None,
        floor_label: str = 'floor',
):
    """One line per entry of ``curves`` (a value per step, x from ``x_start``: 1 for depths and epochs alike),
    legend outside the axes; returns the figure.

    ``y_range`` ``(low, high)``: bounds the y axis always reaches (data beyond them widens it), e.g. ``(0, 100)`` for a
    percentage and ``(0, None)`` for a quantity whose zero means something (KL divergence, temperature): a curve that
    moves by 0.0003 then stays flat instead of being stretched over the whole height. An open end (None) follows the
    data. Tick labels are plain values (no offset; a multiplier only for values of about 1e6 or more or all below about
    1e-3). Each series has its own line style and marker, drawn smaller than the one before: series that coincide (e.g.
    every temperature of an untrained model) stay visible as nested markers. ``floors`` (curve name -> a value per step)
    draws a level the curve cannot go below as a dotted line in a darker shade of the curve's colour, over it
    (``floor_label`` names it in the legend).
    """
    fig = figure(9, 5)
    ax = fig.add_subplot()
    for i, (name, ys) in enumerate(curves.items()):
        ax.plot(range(x_start, x_start + len(ys)), ys, label=name, linestyle=_LINESTYLES[i % len(_LINESTYLES)],
                marker=_MARKERS[i % len(_MARKERS)], markersize=max(9 - 1.5 * i, 3), linewidth=max(3 - 0.5 * i, 1),
                clip_on=False)  # a point on a bound (0 % top-1) is drawn whole
    from matplotlib.colors import to_rgb
    colours = {line.get_label(): to_rgb(line.get_color()) for line in ax.get_lines()}
    for name, ys in (floors or {}).items():  # over the curves, darker: a curve lying on its floor stays readable
        colour = tuple(0.5 * c for c in colours.get(name, (0.8, 0.8, 0.8)))
        ax.plot(range(x_start, x_start + len(ys)), ys, label=f'{name}: {floor_label}', color=colour,
                linestyle=':', linewidth=2, zorder=3, marker='_', markersize=14, markeredgewidth=2)  # a lone
        # point (one depth) has no line to draw: the marker is the floor's level there
    values = [float(v) for ys in [*curves.values(), *(floors or {}).values()] for v in ys]
    ax.set_ylim(*y_limits(values, *y_range))
    steps = max((len(ys) for ys in curves.values()), default=0)
    if steps <= 20:
        ax.set_xticks(range(x_start, x_start + steps))  # every epoch / depth
    else:
        from matplotlib.ticker import MaxNLocator
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(x_start - 0.5, x_start + steps - 0.5)  # no tick where there is no epoch / depth (0, last + 1)
    _plain_ticks(ax.yaxis)
    ax.grid(True, color='0.9')
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if title:
        ax.set_title(break_long_words(title, 60), wrap=True)
    labels = [line.get_label() for line in ax.get_lines()]
    if max(map(len, labels), default=0) <= LEGEND_BESIDE:  # never over the data: beside the axes, or below them
        ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1.), borderaxespad=0., frameon=False)
    else:  # long labels (a model's kwargs) beside the axes left them a sliver of the width
        ax.legend(loc='upper center', bbox_to_anchor=(0.5, -0.14), borderaxespad=0., frameon=False)
    save(fig, path)
    return fig


def plot_ratios(
        labels: Sequence[str],
        medians: Sequence[float],
        lows: Sequence[float],
        highs: Sequence[float],
        references: Sequence[float],
        path: str,
        title: str = '',
):
    """Horizontal bars of throughput ratios to the baseline (median, min-max whisker) with a marker at the ratio the
    MACs alone predict, ``references``: baseline MACs / each row's MACs (below 1 for a model of more MACs)."""
    fig = figure(10, 1.5 + 0.32 * len(labels))
    ax = fig.add_subplot()
    rows = range(len(labels))
    errors = [[m - lo for m, lo in zip(medians, lows)], [hi - m for m, hi in zip(medians, highs)]]
    ax.barh(rows, medians, xerr=errors, color='tab:blue', capsize=3,
            label='throughput ratio to baseline (median; whisker: min-max)')
    ax.scatter(references, rows, marker='|', s=250, linewidths=3, color='tab:red', zorder=3,
               label="baseline MACs / the row's MACs (what MACs alone predict)")
    ax.axvline(1.0, color='black', linewidth=1)
    ax.set_yticks(list(rows), labels)
    ax.invert_yaxis()
    ax.grid(True, axis='x', color='0.9')
    ax.set_xlabel('ratio to baseline')
    if title:
        ax.set_title(break_long_words(title, 70), wrap=True)
    fig.legend(loc='outside lower center', frameon=False)  # one entry a row: two side by side overran 10 inches
    save(fig, path)
    return fig


def plot_attention(
        images: Sequence,
        columns: Dict[str, Sequence[Grid]],
        path: str,
        title: str = '',
        notes: Sequence[str] = (),
        cell: float = 3.,
        value_label: str = 'attention weight',
        uniform: Optional[Mapping[str, float]] = None,
        row_labels: Sequence[str] = (),
        max_columns: int = 6,
        views: Optional[Mapping[str, Tuple[str, Sequence]]] = None,
):
    """Per image: the image, then one map per entry of ``columns`` (label -> one grid per image) in its own panel on
    the image's frame, wrapped into balanced rows of at most ``max_columns`` panels (13 panels: rows of 5, 5 and 3).
    Returns the figure.

    Maps are drawn opaque, not blended over the image: a blend mixes each cell's colour with the pixels under it, so
    the colour read off the panel would no longer be the weight the colour bar gives it. All maps share one colour
    scale, from 0 to the largest weight of any map in the figure (or a higher ``uniform`` level), with one colour
    bar: maps are comparable across images, models and heads, and a near-uniform map looks flat instead of being
    stretched into structure. ``uniform`` (name -> level, e.g. ``{'SL': 1/64}``) marks
    on the colour bar the weight a cell holds when attention is spread evenly over the keys a query may attend to
    (the caller knows which keys those are; none is guessed). ``row_labels`` (one per image, e.g. its file name)
    are written beside the first panel of each of the image's rows. ``cell``: inches per panel (100 dpi). ``views``
    (column label -> ``(name, one image per image)``) gives the images a model sees where they are not ``images`` (its
    data config crops another region): an input panel ``input (name)`` precedes that column, and it and the columns
    after it are drawn on that panel's frame, so that every map sits beside the pixels it attends over.
    """
    import numpy as np
    from matplotlib.colors import Normalize

    grids = [np.asarray(grid, dtype=float) for column in columns.values() for grid in column]
    if not grids:
        raise ValueError('plot_attention needs at least one map')
    uniform = dict(uniform or {})
    peaks = [float(g[np.isfinite(g)].max()) for g in grids if np.isfinite(g).any()]  # a NaN cell is left blank,
    norm = Normalize(vmin=0., vmax=max(peaks + list(uniform.values()), default=1.) or 1.)  # not the scale's end
    views = dict(views or {})
    panels_of = [('input', images, None)]  # (title, images, maps): an input panel, or the maps of a column
    for label, column in columns.items():
        if label in views:
            panels_of.append((f'input ({views[label][0]})', views[label][1], None))
        panels_of.append((label, panels_of[-1][1], column))  # on the frame of the input panel before it
    labels = [title for title, _, _ in panels_of]
    rows_per_image = math.ceil(len(labels) / max_columns)
    ncols = math.ceil(len(labels) / rows_per_image)
    nrows = rows_per_image * len(images)
    width_inches = cell * ncols + 1.2
    fig = figure(width_inches, cell * nrows + 1. + 0.18 * len(notes))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    last_row = len(labels) - (rows_per_image - 1) * ncols  # panels in each image's last row
    for ax in axes[rows_per_image - 1::rows_per_image, last_row:].flat:
        ax.remove()
    kept = [ax for ax in axes.flat if ax.figure is not None]
    mappable = None
    for i in range(len(images)):
        panels = [axes[i * rows_per_image + k // ncols, k % ncols] for k in range(len(labels))]
        for ax, (_, shown, column) in zip(panels, panels_of):
            pixels = np.asarray(shown[i])
            height, width = pixels.shape[:2]
            if column is None:
                ax.imshow(pixels, label=INPUT_LABEL)
                continue
            # the map on its input's frame, opaque, nothing under it: colours are the bar's
            mappable = ax.imshow(np.asarray(column[i], dtype=float), cmap='inferno', norm=norm, label=MAP_LABEL,
                                 extent=(-0.5, width - 0.5, height - 0.5, -0.5), interpolation='nearest')
        for ax, label in zip(panels, labels):
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0 or rows_per_image > 1:  # wrapped rows: every panel says what it is
                ax.set_title(label)
        if i < len(row_labels):
            for ax in panels[::ncols]:  # the first panel of each row names the image
                ax.set_ylabel(textwrap.fill(str(row_labels[i]), int(cell * 10), break_long_words=True))
    shrink = min(1., 0.9 / nrows + 0.3)
    bar = fig.colorbar(mappable, ax=kept, shrink=shrink)
    phrases = [f'{value_label} (shared scale)']
    for k, (name, level) in enumerate(uniform.items()):
        style, word = _LEVEL_STYLES[k % len(_LEVEL_STYLES)]
        bar.ax.axhline(level, color='white', linewidth=2)
        bar.ax.axhline(level, color='black', linewidth=1, linestyle=style)
        fraction = Fraction(level).limit_denominator(10 ** 6)  # 1/64, 1/(N-1): the level as its keys give it
        exact = abs(float(fraction) - level) <= 1e-9 * abs(level)
        phrases.append(f'{word}: uniform, {name} ' + (f'{fraction} = ' if exact else '') + f'{level:.4g}')
    # texts are wrapped here, not with ``wrap=True``: the layout engine then reserves room for the wrapped size. The
    # colour-bar label must fit along the bar (about the panels' height times ``shrink``; 10 pt text: ~13 chars/in)
    bar_chars = max(int(cell * nrows * shrink * 0.85 * 13), 16)
    bar.set_label('\n'.join(line for phrase in phrases for line in textwrap.wrap(phrase, bar_chars)))
    if title:
        fig.suptitle(textwrap.fill(title, int(width_inches * 9)))  # 12 pt: ~11 chars/in, kept clear of the edges
    if notes:
        fig.supxlabel('\n'.join(line for note in notes for line in textwrap.wrap(note, int(width_inches * 12))),
                      fontsize=8, ha='left', x=0.01)
    save(fig, path)
    return fig

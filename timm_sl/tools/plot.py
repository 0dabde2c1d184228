"""Charts with matplotlib (the ``[demo]`` extra): learning curves, throughput ratios and attention-map overlays.

Every function builds a :class:`matplotlib.figure.Figure` on the Agg canvas (no pyplot, no global backend switch,
no display needed), saves it to ``path`` (the format follows the extension) and returns it, so callers and tests can
look at what was drawn. matplotlib is imported inside the functions: importing this module costs nothing.
"""
import textwrap
from typing import Dict, Sequence

__all__ = ['OUT_SUFFIXES', 'plot_attention', 'plot_curves', 'plot_ratios', 'require_matplotlib']

# file types the CLI accepts for --out (all written by matplotlib's Agg / vector backends)
OUT_SUFFIXES = ('.png', '.jpg', '.jpeg', '.pdf', '.svg')

Grid = Sequence[Sequence[float]]

_LINESTYLES = ('-', '--', '-.', ':')
_MARKERS = ('o', 's', '^', 'D', 'v', 'P')


def require_matplotlib() -> None:
    """Raises:
        ImportError: matplotlib is not installed, with the install command (one line).
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        raise ImportError('the charts need matplotlib, which is not installed: pip install "timm-sl[demo]"') from e


def _figure(width: float, height: float, dpi: int = 100):
    """A constrained-layout figure on its own Agg canvas."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=dpi, layout='constrained')
    FigureCanvasAgg(fig)
    return fig


def _plain_ticks(axis) -> None:
    """Tick labels that show the real values: no offset ("+1e-3") and no scientific multiplier."""
    from matplotlib.ticker import ScalarFormatter
    formatter = ScalarFormatter(useOffset=False)
    formatter.set_scientific(False)
    axis.set_major_formatter(formatter)


def plot_curves(
        curves: Dict[str, Sequence[float]],
        path: str,
        title: str = '',
        y_label: str = 'top-1 (%)',
        x_label: str = 'epoch',
):
    """One line per entry of ``curves`` (a value per step, x from 1), legend outside the axes; returns the figure.

    The y axis spans the data (not forced to 0) with plain tick labels, so a curve that moves by 0.001 reads as such.
    Each series has its own line style and marker, drawn smaller than the one before: series that coincide (e.g.
    every temperature of an untrained model) stay visible as nested markers.
    """
    fig = _figure(9, 5)
    ax = fig.add_subplot()
    for i, (name, ys) in enumerate(curves.items()):
        ax.plot(range(1, len(ys) + 1), ys, label=name, linestyle=_LINESTYLES[i % len(_LINESTYLES)],
                marker=_MARKERS[i % len(_MARKERS)], markersize=max(9 - 1.5 * i, 3), linewidth=max(3 - 0.5 * i, 1))
    steps = max((len(ys) for ys in curves.values()), default=0)
    if steps <= 20:
        ax.set_xticks(range(1, steps + 1))  # every epoch / depth
    else:
        from matplotlib.ticker import MaxNLocator
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _plain_ticks(ax.yaxis)
    ax.grid(True, color='0.9')
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if title:
        ax.set_title(title, wrap=True)
    ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1.), borderaxespad=0., frameon=False)  # never over the data
    fig.savefig(path)
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
    """Horizontal bars of throughput ratios (median, min-max whisker) with a marker at a reference (MACs) ratio."""
    fig = _figure(10, 1.5 + 0.32 * len(labels))
    ax = fig.add_subplot()
    rows = range(len(labels))
    errors = [[m - lo for m, lo in zip(medians, lows)], [hi - m for m, hi in zip(medians, highs)]]
    ax.barh(rows, medians, xerr=errors, color='tab:blue', capsize=3,
            label='throughput ratio to baseline (median; whisker: min-max)')
    ax.scatter(references, rows, marker='|', s=250, linewidths=3, color='tab:red', zorder=3, label='MACs ratio')
    ax.axvline(1.0, color='black', linewidth=1)
    ax.set_yticks(list(rows), labels)
    ax.invert_yaxis()
    ax.grid(True, axis='x', color='0.9')
    ax.set_xlabel('ratio to baseline')
    if title:
        ax.set_title(title, wrap=True)
    ax.legend(loc='upper center', bbox_to_anchor=(0.5, -0.12 - 0.4 / max(len(labels), 1)), ncol=2, frameon=False)
    fig.savefig(path)
    return fig


def plot_attention(
        images: Sequence,
        columns: Dict[str, Sequence[Grid]],
        path: str,
        title: str = '',
        notes: Sequence[str] = (),
        cell: float = 3.,
        value_label: str = 'attention weight',
):
    """One row per image: the image, then one overlay per entry of ``columns`` (label -> one grid per image).

    All overlays share one colour scale, from 0 to the largest weight of any map in the figure, with one colour bar:
    maps are comparable across images, models and heads, and a near-uniform map looks flat instead of being stretched
    into structure. The colour bar marks the uniform level (the mean weight of the maps). ``cell``: inches per panel
    (100 dpi). Returns the figure.
    """
    import numpy as np
    from matplotlib.colors import Normalize

    grids = [np.asarray(grid, dtype=float) for column in columns.values() for grid in column]
    if not grids:
        raise ValueError('plot_attention needs at least one map')
    norm = Normalize(vmin=0., vmax=max(float(g.max()) for g in grids) or 1.)
    labels = ['input'] + list(columns)
    fig = _figure(cell * len(labels) + 1.2, cell * len(images) + 1. + 0.18 * len(notes))
    axes = fig.subplots(len(images), len(labels), squeeze=False)
    mappable = None
    for i, image in enumerate(images):
        pixels = np.asarray(image)
        grey = pixels.mean(-1) if pixels.ndim == 3 else pixels  # under the map: colours are the map's alone
        height, width = pixels.shape[:2]
        axes[i, 0].imshow(pixels)
        for j, column in enumerate(columns.values(), start=1):
            axes[i, j].imshow(grey, cmap='gray')
            mappable = axes[i, j].imshow(np.asarray(column[i], dtype=float), cmap='inferno', norm=norm, alpha=0.7,
                                         extent=(-0.5, width - 0.5, height - 0.5, -0.5), interpolation='nearest')
        for j, label in enumerate(labels):
            axes[i, j].set_xticks([])
            axes[i, j].set_yticks([])
            if i == 0:
                axes[i, j].set_title(label)
    shrink = min(1., 0.9 / len(images) + 0.3)
    bar = fig.colorbar(mappable, ax=axes, shrink=shrink)
    uniform = float(np.mean([g.mean() for g in grids]))
    bar.ax.axhline(uniform, color='white', linewidth=2)
    bar.ax.axhline(uniform, color='black', linewidth=1, linestyle='--')
    # texts are wrapped here, not with ``wrap=True``: the layout engine then reserves room for the wrapped size. The
    # colour-bar label must fit along the bar (about the panels' height times ``shrink``; 10 pt text: ~13 chars/in)
    bar_chars = max(int(cell * len(images) * shrink * 0.85 * 13), 16)
    bar.set_label('\n'.join(line for phrase in (f'{value_label} (shared scale)', f'dashed: uniform = {uniform:.4g}')
                            for line in textwrap.wrap(phrase, bar_chars)))
    width_inches = cell * len(labels) + 1.2
    if title:
        fig.suptitle(textwrap.fill(title, int(width_inches * 9)))  # 12 pt: ~11 chars/in, kept clear of the edges
    if notes:
        fig.supxlabel('\n'.join(line for note in notes for line in textwrap.wrap(note, int(width_inches * 12))),
                      fontsize=8, ha='left', x=0.01)
    fig.savefig(path)
    return fig


"""Charts as PNG drawn with Pillow (no plotting library needed): learning curves and ratio bars."""
import textwrap
from typing import Dict, List, Sequence

from PIL import Image, ImageDraw, ImageOps

__all__ = ['attention_overlay', 'plot_attention', 'plot_curves', 'plot_ratios']

_COLORS = [(214, 39, 40), (31, 119, 180), (44, 160, 44), (255, 127, 14), (148, 103, 189), (140, 86, 75)]


def plot_curves(curves: Dict[str, Sequence[float]], path: str, title: str = '', y_label: str = 'top-1 (%)',
                x_label: str = 'epoch', size=(720, 460)) -> None:
    """Draw one line per entry of ``curves`` (values per epoch, 1-based x) with axes, ticks, labels and a legend."""
    width, height = size
    left, right, top, bottom = 70, 20, 40, 60
    img = Image.new('RGB', size, 'white')
    draw = ImageDraw.Draw(img)
    values = [v for ys in curves.values() for v in ys]
    y_min, y_max = (min(values), max(values)) if values else (0., 1.)
    y_min, y_max = min(0., y_min), max(y_max, y_min + 1e-6)
    n = max((len(ys) for ys in curves.values()), default=1)
    plot_w, plot_h = width - left - right, height - top - bottom

    def to_xy(i: int, y: float):
        x = left + (plot_w * (i / max(n - 1, 1)))
        return x, top + plot_h * (1 - (y - y_min) / (y_max - y_min))

    draw.rectangle([left, top, left + plot_w, top + plot_h], outline='black')
    for k in range(6):  # y ticks and grid
        y = y_min + (y_max - y_min) * k / 5
        _, py = to_xy(0, y)
        draw.line([left, py, left + plot_w, py], fill=(225, 225, 225))
        draw.text((left - 45, py - 6), f'{y:.1f}', fill='black')
    for i in range(n):  # x ticks
        px, _ = to_xy(i, y_min)
        if n <= 20 or i % max(1, n // 10) == 0:
            draw.text((px - 4, top + plot_h + 6), str(i + 1), fill='black')
    for idx, (name, ys) in enumerate(curves.items()):
        color = _COLORS[idx % len(_COLORS)]
        points: List = [to_xy(i, y) for i, y in enumerate(ys)]
        if len(points) > 1:
            draw.line(points, fill=color, width=3)
        for px, py in points:
            draw.ellipse([px - 3, py - 3, px + 3, py + 3], fill=color)
        draw.line([left + 12, top + 14 + 18 * idx, left + 36, top + 14 + 18 * idx], fill=color, width=3)  # legend
        draw.text((left + 42, top + 8 + 18 * idx), name, fill='black')
    draw.text((left + plot_w // 2 - 20, height - 30), x_label, fill='black')
    draw.text((8, top - 28), y_label, fill='black')
    if title:
        draw.text((left + plot_w // 2 - 4 * len(title) // 2, 10), title, fill='black')
    img.save(path)


def plot_ratios(labels: Sequence[str], medians: Sequence[float], lows: Sequence[float], highs: Sequence[float],
                references: Sequence[float], path: str, title: str = '', size=(820, 0)) -> None:
    """Horizontal bars of throughput ratios (median, min-max whisker) with a marker at a reference (MACs) ratio."""
    row_h, left, right, top = 26, 260, 30, 50
    width = size[0]
    height = top + row_h * len(labels) + 60
    img = Image.new('RGB', (width, height), 'white')
    draw = ImageDraw.Draw(img)
    x_max = max([1.05] + list(highs) + list(references))
    plot_w = width - left - right

    def to_x(value: float) -> float:
        return left + plot_w * value / x_max

    for k in range(int(x_max / 0.2) + 1):  # grid every 0.2
        x = to_x(0.2 * k)
        draw.line([x, top - 5, x, top + row_h * len(labels)], fill=(225, 225, 225))
        draw.text((x - 8, top + row_h * len(labels) + 6), f'{0.2 * k:.1f}', fill='black')
    draw.line([to_x(1.0), top - 5, to_x(1.0), top + row_h * len(labels)], fill='black')
    for i, (label, med, lo, hi, ref) in enumerate(zip(labels, medians, lows, highs, references)):
        y = top + row_h * i + row_h // 2
        draw.text((8, y - 6), label, fill='black')
        draw.rectangle([left, y - 8, to_x(med), y + 8], fill=_COLORS[1])
        draw.line([to_x(lo), y, to_x(hi), y], fill='black', width=2)
        draw.line([to_x(ref), y - 10, to_x(ref), y + 10], fill=_COLORS[0], width=3)
    legend_y = height - 28
    draw.rectangle([left, legend_y, left + 20, legend_y + 12], fill=_COLORS[1])
    draw.text((left + 26, legend_y), 'throughput ratio to baseline (median; whisker: min-max)', fill='black')
    draw.line([left + 420, legend_y - 2, left + 420, legend_y + 14], fill=_COLORS[0], width=3)
    draw.text((left + 428, legend_y), 'MACs ratio', fill='black')
    if title:
        draw.text((left, 14), title, fill='black')
    img.save(path)


Grid = Sequence[Sequence[float]]


def _heat(grid: Grid) -> Image.Image:
    """A 2-D map as an 8-bit grey image, min-max normalised (a constant map is mid grey)."""
    values = [v for row in grid for v in row]
    lo, hi = min(values), max(values)
    span = hi - lo
    heat = Image.new('L', (len(grid[0]), len(grid)))
    heat.putdata([int(round(255 * (v - lo) / span)) if span > 0 else 128 for v in values])
    return heat


def _colorize(grey: Image.Image) -> Image.Image:
    return ImageOps.colorize(grey, black=(20, 30, 160), mid=(250, 220, 40), white=(220, 20, 20))


def attention_overlay(image: Image.Image, grid: Grid, alpha: float = 0.55) -> Image.Image:
    """``image`` with the token map ``grid`` (rows of values, any scale) upsampled onto it as a heat map."""
    heat = _colorize(_heat(grid).resize(image.size, Image.Resampling.BILINEAR))
    return Image.blend(image.convert('RGB'), heat, alpha)


def plot_attention(
        images: Sequence[Image.Image],
        columns: Dict[str, Sequence[Grid]],
        path: str,
        title: str = '',
        notes: Sequence[str] = (),
        cell: int = 144,
) -> None:
    """One row per image: the image, then one overlay per entry of ``columns`` (label -> one grid per image).

    Each overlay is normalised on its own (the colour bar runs from that map's lowest to its highest weight).
    """
    pad, head = 8, 44
    labels = ['input'] + list(columns)
    width = max(pad + (cell + pad) * len(labels), 420)
    notes = [line for note in notes for line in textwrap.wrap(note, (width - 2 * pad) // 6)]
    foot = 40 + 14 * len(notes)
    height = head + (cell + pad) * len(images) + foot
    fig = Image.new('RGB', (width, height), 'white')
    draw = ImageDraw.Draw(fig)
    if title:
        draw.text((pad, 6), title, fill='black')
    for j, label in enumerate(labels):
        draw.text((pad + j * (cell + pad), head - 16), label[:cell // 6], fill='black')
    for i, image in enumerate(images):
        shown = image.convert('RGB').resize((cell, cell), Image.Resampling.BILINEAR)
        y = head + i * (cell + pad)
        fig.paste(shown, (pad, y))
        for j, grids in enumerate(columns.values(), start=1):
            fig.paste(attention_overlay(shown, grids[i]), (pad + j * (cell + pad), y))
    bar_y = head + (cell + pad) * len(images) + 6  # colour bar legend
    bar = _colorize(Image.linear_gradient('L').rotate(90).resize((160, 12)))
    fig.paste(bar, (pad + 40, bar_y))
    draw.text((pad, bar_y), 'low', fill='black')
    draw.text((pad + 206, bar_y), 'high attention (per map)', fill='black')
    for k, note in enumerate(notes):
        draw.text((pad, bar_y + 20 + 14 * k), note, fill='black')
    fig.save(path)

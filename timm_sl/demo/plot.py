"""Learning curves as a PNG drawn with Pillow (no plotting library needed)."""
from typing import Dict, List, Sequence

from PIL import Image, ImageDraw

__all__ = ['plot_curves']

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

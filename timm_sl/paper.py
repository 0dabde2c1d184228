"""The paper's Table 2 figures (Tiny-ImageNet: 64 px, 200 classes), for side-by-side reports.

MACs in millions (the paper's "FLOPs" column counts multiply-accumulates), parameters in millions, throughput in
images/s (RTX 2080 Ti, batch 128). Keys: ``'base'``, ``'sl'`` and, for the pooling families, ``'sl_no_spool'``.
"""
from typing import Dict, Tuple

__all__ = ['TABLE2']

# model -> variant -> (MACs M, params M, throughput img/s)
TABLE2: Dict[str, Dict[str, Tuple[float, float, float]]] = {
    'sl_vit_64': {'base': (189.8, 2.8, 8593), 'sl': (199.2, 2.9, 7697)},
    'sl_t2t_64': {'base': (643.0, 6.7, 3388), 'sl': (671.4, 7.1, 2943)},
    'sl_cait_64': {'base': (613.8, 9.1, 3138), 'sl': (623.3, 9.2, 2967)},
    'sl_pit_64': {'base': (279.2, 7.1, 7583), 'sl_no_spool': (280.4, 7.1, 6632), 'sl': (322.9, 8.7, 5981)},
    'sl_swin_64': {'base': (242.3, 7.1, 6804), 'sl_no_spool': (247.0, 7.1, 6384), 'sl': (284.9, 10.2, 5711)},
}

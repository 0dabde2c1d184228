"""Parameter and MAC counts against the paper's Table 2 (Tiny-ImageNet: 64 px, 200 classes), within 3%."""
import pytest

import timm
from timm_sl.profile import count_macs, count_params

BASE = dict(spt=False, lsa=False, spt_pool=False)

# model, kwargs, MACs (M), params (M)
ROWS = [
    ('sl_vit_64', dict(spt=False, lsa=False), 189.8, 2.8),
    ('sl_vit_64', {}, 199.2, 2.9),
    ('sl_cait_64', dict(spt=False, lsa=False), 613.8, 9.1),
    ('sl_cait_64', {}, 623.3, 9.2),
    ('sl_t2t_64', dict(spt=False, lsa=False), 643.0, 6.7),
    # The paper prints 7.1 M for SL-T2T; the authors' code builds 6.70 M (657.6 M MACs) for it, counted by
    # instantiating their T2T_ViT(img_size=64, is_SPT=True, is_LSA=True). The MACs agree with the paper's 671.4.
    ('sl_t2t_64', {}, 671.4, 6.70),
    ('sl_pit_64', BASE, 279.2, 7.1),
    ('sl_pit_64', dict(spt_pool=False), 280.4, 7.1),
    ('sl_pit_64', {}, 322.9, 8.7),
    ('sl_swin_64', BASE, 242.3, 7.1),
    ('sl_swin_64', dict(spt_pool=False), 247.0, 7.1),
    # The paper prints 10.2 M params for this row, which its own MACs (284.9 M) contradict; the authors' code
    # builds 8.65 M parameters for it (counted by instantiating their SwinTransformer(is_SPT=True, is_LSA=True)).
    ('sl_swin_64', {}, 284.9, 8.65),
]


@pytest.mark.parametrize('name,kwargs,macs,params', ROWS, ids=lambda v: str(v))
def test_table2_row(name, kwargs, macs, params):
    model = timm.create_model(name, **kwargs)
    assert count_macs(model) / 1e6 == pytest.approx(macs, rel=0.03)
    assert count_params(model) / 1e6 == pytest.approx(params, rel=0.03)


def test_timm_pit_pooling_layout_stays_reachable():
    model = timm.create_model('sl_pit_64', pool_layout='timm', **BASE)
    assert count_params(model) / 1e6 == pytest.approx(6.873, abs=0.001)
    assert count_macs(model) / 1e6 == pytest.approx(270.6, abs=0.1)

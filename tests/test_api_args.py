"""The public functions with bad arguments: what a refusal names (the model the user asked for), and arguments that
were taken without a word (a value that gave a silently wrong model, or a traceback far from the argument)."""
import pytest

import timm
import timm_sl  # noqa: F401  (registers the sl_ models)
from timm_sl import SlVisionTransformer


@pytest.mark.parametrize('name,kwargs,says', [
    ('sl_vit_32', dict(qkv_bias='maybe'), "sl_vit_32: qkv_bias='maybe' is invalid; allowed: True or False."),
    ('sl_vit_64', dict(depht=1), "sl_vit_64 got unknown model kwargs ['depht']; allowed: "),
    ('sl_cait_32', dict(spt=False, shift_ratio=.25), 'sl_cait_32: shift_ratio=0.25 is unused with spt=False; '),
    ('sl_swin_32', dict(patch_size=64), 'sl_swin_32: img_size=32, patch_size=64, window_size=4 (stage 0) give a 0x0 '),
    ('sl_t2t_32', dict(img_size=4096), 'sl_t2t_32: img_size=4096, first soft split'),
    ('sl_pit_32', dict(img_size=4096, stride=2), 'sl_pit_32: img_size=4096, patch_size=2, stride=2 give a 2048x2048'),
])
def test_a_refusal_names_the_model_asked_for(name, kwargs, says):
    """``timm.create_model('sl_vit_32', qkv_bias='maybe')`` said 'SlVisionTransformer: ...', a class the user never
    named (five registered models share it, at other sizes)."""
    with pytest.raises((TypeError, ValueError)) as refused:
        timm.create_model(name, **kwargs)
    assert str(refused.value).startswith(says)


def test_a_resize_names_the_model_and_the_class_names_itself():
    """A later ``set_input_size`` names the registered model it was built as; a class built by hand, its class."""
    model = timm.create_model('sl_vit_32', depth=1)
    with pytest.raises(ValueError, match=r'^sl_vit_32: img_size=4096, patch_size=\(4, 4\) give a 1024x1024 token '):
        model.set_input_size(img_size=4096)
    with pytest.raises(ValueError, match=r"^SlVisionTransformer: qkv_bias='x' is invalid; allowed: True or False\.$"):
        SlVisionTransformer(qkv_bias='x')
    timm.create_model('sl_vit_32', depth=1)  # the name is not left behind for the next model built
    with pytest.raises(ValueError, match=r"^SlVisionTransformer: qkv_bias='x'"):
        SlVisionTransformer(qkv_bias='x')

from timm_sl.cli import main


def test_list_prints_params_macs_and_baseline(capsys):
    assert main(['list', '--filter', 'sl_vit_64', '--baseline']) == 0
    out = capsys.readouterr().out
    header, _, row = out.strip().splitlines()
    assert header.split()[:3] == ['model', 'params', '(M)']
    cells = row.split()
    assert cells[0] == 'sl_vit_64'
    assert cells[1:5] == ['2.91', '199.0', '2.76', '189.5']  # SL params/MACs, baseline params/MACs (M)
    assert cells[5:8] == ['199.2/2.9', ';', '189.8/2.8']      # the paper's Table 2 next to them
    assert '3x64x64' in cells and '200' in cells


def test_list_unknown_filter_fails(capsys):
    assert main(['list', '--filter', 'sl_nothing_*']) == 1
    assert "no sl_ model matches 'sl_nothing_*'" in capsys.readouterr().err

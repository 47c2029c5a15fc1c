"""tools/bench/preview.py: the real preview's --baseline, refused or skipped before anything runs."""

import pytest

from tools.bench import preview


def test_preview_refuses_a_baseline_without_the_pack_preview(capsys):
    with pytest.raises(SystemExit) as exit_:
        preview.main(["--kinds", "alone", "--baseline", "."])
    assert exit_.value.code == 2
    assert "--baseline compares previews with the pack" in capsys.readouterr().err


def test_preview_skips_a_baseline_without_the_sim_stack(tmp_path, capsys):
    assert preview.main(["--baseline", str(tmp_path)]) == preview.SKIP
    assert capsys.readouterr().out.startswith(f"SKIP the sim stack is not in {tmp_path}: no ")

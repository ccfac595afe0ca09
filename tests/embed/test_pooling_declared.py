"""``pooling=auto`` on a model that declares no pooling is an error naming the model and setting."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from atomicrag.embed.encoders import _model_pooling


def test_undeclared_pooling_is_an_error_naming_model_and_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as err:
        _model_pooling(str(tmp_path), local_only=True)
    assert str(tmp_path) in str(err.value) and "embedder.pooling" in str(err.value)


def test_declared_pooling_is_read(tmp_path: Path) -> None:
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    assert _model_pooling(str(tmp_path), local_only=True) == "cls"
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    assert _model_pooling(str(tmp_path), local_only=True) == "mean"

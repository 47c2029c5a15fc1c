"""This checkout's components/model.py, for the harness that also plans older commits.

`make diff` plans a base commit with that commit's components/ first on sys.path (tools/plan_tree.py),
so `components.model` may be an older copy without what the harness uses to put values in comparable
form; the harness then loads this checkout's file under its own name.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

MODEL = Path(__file__).resolve().parent.parent / "components" / "model.py"


def _checkout_model() -> ModuleType:
    import components.model

    if Path(components.model.__file__ or "").resolve() == MODEL:
        return components.model
    spec = importlib.util.spec_from_file_location("tools._checkout_components_model", MODEL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


whole_numbers = _checkout_model().whole_numbers

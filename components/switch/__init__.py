"""The switch section: the stack file's model (`model.py`), the facts the component reads (`plan.py`),
the rules (`rules.py`), each switch OS's lines (`dialects.py`), the scripts (`files.py`), the
SpectrumSwitch component, and `render.py` for `make render`."""

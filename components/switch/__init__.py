"""The switch section: config (`config.py`), switch script text (`files.py`), the SpectrumSwitch
component, and `render.py` for `make render`."""

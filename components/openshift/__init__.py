"""The openshift section: config and cluster plan (`config.py`), file text (`files.py`), the
OpenShiftUpi component, and `render.py` for `make render`."""

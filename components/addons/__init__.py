"""The addons section: config (`config.py`), the Kubernetes objects per add-on, the ClusterAddons
component, and `render.py` for `make render`."""

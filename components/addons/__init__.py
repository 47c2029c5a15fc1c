"""The addons section: the stack file's model (`model.py`), the facts (`plan.py`), the rules
(`rules.py`), the Kubernetes objects per add-on, the ClusterAddons component, and `render.py` for
`make render`."""

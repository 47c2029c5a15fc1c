"""The openshift section: the stack file's model (`model.py`), the resolved cluster (`plan.py`),
its rules (`rules.py`), the generated file text (`files/`), the OpenShiftUpi and ClusterNodes
components, and `render.py` for `make render`."""

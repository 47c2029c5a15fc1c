"""The openshift section: config, renderers and component (owned by its engineer)."""

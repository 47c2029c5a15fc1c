"""gpu-lab components: the configuration model, the renderers, and the Pulumi components."""

"""gpu-lab components: each section's configuration model, file text and Pulumi component, and
the lab plan that ties the sections together."""

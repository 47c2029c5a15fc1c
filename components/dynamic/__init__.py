"""The project's Pulumi dynamic providers: vSphere settings, vGPU profiles, node rolls, the identity
guard. Their classes are pickled into stack state by module and name (docs/engine.md)."""

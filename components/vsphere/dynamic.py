"""Old home of the vSphere setting providers, kept for stack state: every resource's `__provider`
input names its provider class by module and name (pulumi.dynamic pickles it), and states written
before components/dynamic/ name this module. Import from components.dynamic, never from here.
"""

from components.dynamic.host_settings import (
    AdvancedOptionProvider,
    FirewallRulesetProvider,
    GraphicsTypeProvider,
    ModuleOptionsProvider,
)
from components.dynamic.vgpu import VgpuProfileProvider

__all__ = [
    "AdvancedOptionProvider",
    "FirewallRulesetProvider",
    "GraphicsTypeProvider",
    "ModuleOptionsProvider",
    "VgpuProfileProvider",
]

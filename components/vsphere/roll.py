"""Old home of the node roll's provider, kept for stack state: every NodeRoll's `__provider` input
names its provider class by module and name (pulumi.dynamic pickles it), and states written before
components/dynamic/ name this module. Import from components.dynamic.roll, never from here.
"""

from components.dynamic.roll import NodeRollProvider

__all__ = ["NodeRollProvider"]

"""Old home of the identity guard's provider, kept for stack state: the lab-identity resource's
`__provider` input names its provider class by module and name (pulumi.dynamic pickles it), and
states written before components/dynamic/ name this module. Import from components.dynamic.guard
or components.identity_rules, never from here.
"""

from components.dynamic.guard import _IdentityProvider

__all__ = ["_IdentityProvider"]

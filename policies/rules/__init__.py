"""The gpu-lab policy rules, one module per domain.

The modules use relative imports only: the pack runs them as the top-level package ``rules``
(``policies/`` is the program directory), and the tests import them the same way.
"""

from . import commands, compute, kubernetes, mirror, network, openshift, secrets, switch

ALL_POLICIES = [
    *network.POLICIES,
    *compute.POLICIES,
    *openshift.POLICIES,
    *switch.POLICIES,
    *kubernetes.POLICIES,
    *secrets.POLICIES,
    *commands.POLICIES,
    *mirror.POLICIES,
]

__all__ = ["ALL_POLICIES"]

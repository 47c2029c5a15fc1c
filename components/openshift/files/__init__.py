"""The text of every file the openshift section generates, one module per artifact.

Each renderer takes the ClusterPlan (and, inside an `apply`, secret values as plain strings) and
returns text; nothing here touches Pulumi, the network or the file system, so the tests and
`make render` read exactly what the helper node and the nodes get.
"""

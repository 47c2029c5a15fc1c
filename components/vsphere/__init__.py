"""The vSphere half of the lab: the RoCE fabric (vDS, vmk, host settings) and the VMs."""

"""The hosts' half of the RoCE fabric, shared by the vSphere hosts and the switch section's bare-metal script."""

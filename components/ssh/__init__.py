"""SSH trust shared by every connection the lab makes: pinned host keys checked before use."""

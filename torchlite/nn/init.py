"""Weight initialisation (nn.init)."""

"""torchlite.linalg (being written)."""

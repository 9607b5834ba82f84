"""torch.backends.mps: torchlite has no Metal backend."""


def is_available():
    return False


def is_built():
    return False

"""torchlite.optim: optimizers and learning-rate schedulers (PyTorch's torch.optim)."""

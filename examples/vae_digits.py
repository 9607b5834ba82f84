"""A variational autoencoder (Kingma & Welling, 2014) on the 8x8 handwritten digits that
scikit-learn ships, written with torchlite.distributions: the encoder gives a diagonal
Normal q(z | x), a sample comes from its reparameterised rsample (so gradients reach the
encoder through the noise), the decoder gives the pixels' Normal p(x | z), and the loss is
the negative evidence lower bound

    -ELBO = -E_q[log p(x | z)] + KL(q(z | x) || p(z)),   p(z) = Normal(0, 1),

with the KL term from kl_divergence in closed form.  At the end it decodes draws from the
prior into a PNG of new digits (when matplotlib is installed).

    python -m pip install -e ".[examples]"     # scikit-learn, matplotlib
    python examples/vae_digits.py --epochs 40
"""
import argparse
import os
import sys
import tempfile

import torchlite as torch
from torchlite import nn
from torchlite.distributions import Independent, Normal, kl_divergence
from torchlite.utils.data import DataLoader, TensorDataset, random_split


class VAE(nn.Module):
    """64 pixels -> hidden -> (mean, log-variance) of a latent-dim Normal; latent -> hidden ->
    the pixels' means, with one learned noise scale per pixel (at least half a gray level:
    pixels that are always blank would otherwise shrink it, and the loss, without end)."""

    def __init__(self, latent=4, hidden=128):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                     nn.ReLU(), nn.Linear(hidden, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(),
                                     nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 64))
        self.log_scale = nn.Parameter(torch.full((64,), -1.0))
        self.latent = latent

    def posterior(self, x):
        """q(z | x): a Normal per latent dim (Independent: one event of `latent` dims)."""
        mean, log_var = self.encoder(x).chunk(2, dim=-1)
        return Independent(Normal(mean, (0.5 * log_var).exp()), 1)

    def likelihood(self, z):
        """p(x | z): a Normal per pixel around the decoded image."""
        scale = self.log_scale.exp() + 1 / 32       # the data have 17 gray levels, 1/16 apart
        return Independent(Normal(self.decoder(z).sigmoid(), scale), 1)

    def prior(self, batch, device):
        zeros = torch.zeros(batch, self.latent, device=device)
        return Independent(Normal(zeros, torch.ones_like(zeros)), 1)

    def loss(self, x):
        """The negative ELBO per image, averaged over the batch."""
        q = self.posterior(x)
        z = q.rsample()                                   # reparameterised: mean + std * eps
        reconstruction = self.likelihood(z).log_prob(x)
        kl = kl_divergence(q, self.prior(x.shape[0], x.device))   # closed form, per image
        return (kl - reconstruction).mean()


def digits(seed):
    """The digits as (train, test) datasets of 64 pixel intensities in [0, 1]."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("scikit-learn is not installed: the digits come from it "
                 "(python -m pip install scikit-learn)")
    pixels = torch.tensor(load_digits().data, dtype=torch.float32) / 16.0
    data = TensorDataset(pixels)
    return random_split(data, [0.8, 0.2], generator=torch.Generator().manual_seed(seed))


def mean_loss(model, loader, device):
    model.eval()
    total = n = 0
    with torch.no_grad():
        for (x,) in loader:
            total += model.loss(x.to(device)).item() * len(x)
            n += len(x)
    model.train()
    return total / n


def save_samples(model, path, device, rows=8):
    """Decode rows x rows draws from the prior into a PNG grid, if matplotlib is there."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the sample image (pip install matplotlib)")
        return
    with torch.no_grad():
        z = model.prior(rows * rows, device).sample()
        images = model.likelihood(z).mean.clamp(0, 1).reshape(rows, rows, 8, 8).cpu().numpy()
    fig, axes = plt.subplots(rows, rows, figsize=(rows, rows))
    for i in range(rows):
        for j in range(rows):
            axes[i, j].imshow(images[i, j], cmap="gray_r", vmin=0, vmax=1)
            axes[i, j].axis("off")
    fig.suptitle("VAE samples: decoded draws from the prior")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    print(f"samples written to {path}")


def main():
    out_dir = os.path.join(tempfile.gettempdir(), "torchlite_examples")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--latent", type=int, default=4, help="latent dimensions")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--samples", default=os.path.join(out_dir, "vae_digits.png"),
                        help="PNG file for decoded prior samples ('' for none)")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    train_data, test_data = digits(args.seed)
    train_loader = DataLoader(train_data, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_data, batch_size=512)
    model = VAE(args.latent, args.hidden).to(args.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    print(f"{len(train_data)} training and {len(test_data)} test images; "
          f"latent dimensions: {args.latent}")
    for epoch in range(args.epochs):
        total = 0.0
        for (x,) in train_loader:
            loss = model.loss(x.to(args.device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(x)
        print(f"epoch {epoch + 1:3d}  train loss {total / len(train_data):8.3f}  "
              f"test loss {mean_loss(model, test_loader, args.device):8.3f}  (negative ELBO, "
              f"nats per image)")
    print(f"final test loss {mean_loss(model, test_loader, args.device):.3f}")
    if args.samples:
        save_samples(model, args.samples, args.device)


if __name__ == "__main__":
    main()

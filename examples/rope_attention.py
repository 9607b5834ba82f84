"""A LLaMA-style character language model whose attention uses rotary position embeddings
(RoPE) written with complex numbers: each head's query/key channels are paired into complex
numbers (view_as_complex), multiplied by e^(i * position * frequency) (polar), and turned
back into reals (view_as_real).  RMSNorm, a SwiGLU feed-forward block, causal
scaled_dot_product_attention and no position embedding table.  Trains on Shakespeare's
sonnets, checks that attention scores depend only on relative positions, and writes a sample.

    python examples/rope_attention.py --steps 300
"""
import argparse
import time

import torchlite as torch
from torchlite import nn
import torchlite.nn.functional as F

from _text import CharText


def rotations(head_dim, length, base=10000.0):
    """e^(i t w_k) for positions t < length and the head_dim / 2 frequencies
    w_k = base^(-2k / head_dim): a (length, head_dim / 2) complex64 tensor."""
    w = base ** -(torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(length, dtype=torch.float32), w)
    return torch.polar(torch.ones_like(angles), angles)


def rotate(x, rot):
    """x: (batch, heads, time, head_dim) reals; channel pairs (2k, 2k+1) are the parts of one
    complex number, turned by the position's rotation rot (time, head_dim / 2)."""
    z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(z * rot).flatten(-2).type_as(x)


class Attention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, rot):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = rotate(q, rot[:t]), rotate(k, rot[:t])        # the only position information
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class SwiGLU(nn.Module):
    def __init__(self, d_model, hidden):
        super().__init__()
        self.gate = nn.Linear(d_model, hidden, bias=False)
        self.up = nn.Linear(d_model, hidden, bias=False)
        self.down = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.RMSNorm(d_model), nn.RMSNorm(d_model)
        self.attn = Attention(d_model, heads)
        self.mlp = SwiGLU(d_model, 8 * d_model // 3)

    def forward(self, x, rot):
        x = x + self.attn(self.norm1(x), rot)
        return x + self.mlp(self.norm2(x))


class RopeLM(nn.Module):
    def __init__(self, vocab, context, d_model=128, heads=4, layers=2):
        super().__init__()
        self.context = context
        self.tokens = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads) for _ in range(layers))
        self.norm = nn.RMSNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.register_buffer("rot", rotations(d_model // heads, context), persistent=False)

    def forward(self, codes):
        x = self.tokens(codes)
        for block in self.blocks:
            x = block(x, self.rot)
        return self.head(self.norm(x))


def check_relative_positions(head_dim=16, length=64):
    """q . k after rotation depends on the positions only through their difference: the
    property RoPE exists for.  Returns the largest change of a score when both positions
    shift by the same amount."""
    rot = rotations(head_dim, length)
    q, k = torch.randn(1, 1, 1, head_dim), torch.randn(1, 1, 1, head_dim)

    def score(m, n):
        return (rotate(q, rot[m:m + 1]) * rotate(k, rot[n:n + 1])).sum().item()

    worst = 0.0
    for m, n in ((5, 2), (40, 7), (20, 20)):
        for shift in (1, 10, length - 1 - max(m, n)):
            worst = max(worst, abs(score(m + shift, n + shift) - score(m, n)))
    return worst


def sample(model, text, prompt, length, temperature, device):
    model.eval()
    codes = text.encode(prompt).unsqueeze(0).to(device)
    with torch.no_grad():
        for _ in range(length):
            logits = model(codes[:, -model.context:])
            probs = (logits[0, -1] / temperature).softmax(-1)
            codes = torch.cat([codes, torch.multinomial(probs, 1).view(1, 1)], dim=1)
    model.train()
    return text.decode(codes[0].tolist())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--sample-length", type=int, default=300)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    print(f"relative-position check: largest deviation {check_relative_positions():.2e}")
    text = CharText()
    print(f"{len(text.text)} characters, vocabulary of {text.vocab_size}")
    model = RopeLM(text.vocab_size, args.context, args.d_model, layers=args.layers).to(args.device)
    print(f"{sum(p.numel() for p in model.parameters())} parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = text.batch(args.batch_size, args.context)
        x, y = x.to(args.device), y.to(args.device)
        loss = F.cross_entropy(model(x).reshape(-1, text.vocab_size), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step == 1 or step % max(1, args.steps // 10) == 0:
            print(f"step {step:5d}  loss {loss.item():.3f}  ({time.perf_counter() - start:.1f} s)")
    print("--- sample ---")
    print(sample(model, text, "Shall I ", args.sample_length, 0.8, args.device))


if __name__ == "__main__":
    main()

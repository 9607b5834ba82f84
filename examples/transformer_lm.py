"""A small decoder-only Transformer language model (GPT-style, character level) on
Shakespeare's sonnets: token + position embeddings, nn.TransformerEncoderLayer blocks run
with a causal mask, and a linear head; the loss falls, then it writes a sample.

    python examples/transformer_lm.py --steps 300
"""
import argparse
import time

import torchlite as torch
from torchlite import nn

from _text import CharText


class TinyGPT(nn.Module):
    def __init__(self, vocab, context, d_model=128, heads=4, layers=2, dropout=0.1):
        super().__init__()
        self.context = context
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(context, d_model)
        block = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, codes):
        t = codes.shape[1]
        x = self.tokens(codes) + self.positions(torch.arange(t, device=codes.device))
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=codes.device)
        x = self.blocks(x, mask=mask, is_causal=True)     # each position sees only the past
        return self.head(self.norm(x))


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
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--sample-length", type=int, default=300)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    text = CharText()
    print(f"{len(text.text)} characters, vocabulary of {text.vocab_size}")
    model = TinyGPT(text.vocab_size, args.context, args.d_model, layers=args.layers).to(args.device)
    print(f"{sum(p.numel() for p in model.parameters())} parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = text.batch(args.batch_size, args.context)
        x, y = x.to(args.device), y.to(args.device)
        loss = loss_fn(model(x).reshape(-1, text.vocab_size), y.reshape(-1))
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

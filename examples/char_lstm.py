"""A character-level LSTM language model on Shakespeare's sonnets: it learns to predict the
next character, the loss falls, and then it writes a sample.

    python examples/char_lstm.py --steps 300
"""
import argparse
import time

import torchlite as torch
from torchlite import nn

from _text import CharText


class CharLSTM(nn.Module):
    def __init__(self, vocab, embed=64, hidden=256, layers=2, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True, dropout=dropout)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, codes, state=None):
        out, state = self.lstm(self.embed(codes), state)
        return self.head(out), state


def sample(model, text, prompt, length, temperature, device):
    """Continue `prompt` one character at a time, feeding the LSTM state along."""
    model.eval()
    codes = text.encode(prompt).unsqueeze(0).to(device)
    out = list(prompt)
    with torch.no_grad():
        logits, state = model(codes)
        for _ in range(length):
            probs = (logits[0, -1] / temperature).softmax(-1)
            nxt = torch.multinomial(probs, 1)
            out.append(text.chars[nxt.item()])
            logits, state = model(nxt.view(1, 1), state)
    model.train()
    return "".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--sample-length", type=int, default=300)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    text = CharText()
    print(f"{len(text.text)} characters, vocabulary of {text.vocab_size}")
    model = CharLSTM(text.vocab_size, hidden=args.hidden).to(args.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = text.batch(args.batch_size, args.seq_len)
        x, y = x.to(args.device), y.to(args.device)
        logits, _ = model(x)
        loss = loss_fn(logits.reshape(-1, text.vocab_size), y.reshape(-1))
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

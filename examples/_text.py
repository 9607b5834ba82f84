"""The character-level text data the language-model examples share: Shakespeare's sonnets
(examples/data/sonnets.txt), a vocabulary, and random training windows."""
import os

import torchlite as torch

TEXT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sonnets.txt")


class CharText:
    """The text as a tensor of character codes, with encode/decode and batch sampling."""

    def __init__(self, path=TEXT_PATH):
        with open(path, encoding="utf-8") as f:
            self.text = f.read()
        self.chars = sorted(set(self.text))
        self.index = {c: i for i, c in enumerate(self.chars)}
        self.data = torch.tensor([self.index[c] for c in self.text], dtype=torch.int64)

    @property
    def vocab_size(self):
        return len(self.chars)

    def encode(self, s):
        return torch.tensor([self.index[c] for c in s], dtype=torch.int64)

    def decode(self, codes):
        return "".join(self.chars[i] for i in codes)

    def batch(self, batch_size, length, generator=None):
        """(inputs, targets), each (batch_size, length): random windows and the same windows
        shifted by one character."""
        starts = torch.randint(0, len(self.data) - length - 1, (batch_size,), generator=generator)
        offsets = torch.arange(length)
        idx = starts.unsqueeze(1) + offsets
        return self.data[idx], self.data[idx + 1]

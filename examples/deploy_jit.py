"""Train the quickstart model briefly, trace it, save it with torchlite.jit.save, then load and
run it in a fresh Python process that never imports the model's class (as a server would).

    python examples/deploy_jit.py [--epochs 3] [--out digits_jit.pt]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torchlite as torch

from quickstart import train_briefly

SERVER = """
import sys
import torchlite as torch
model = torch.jit.load(sys.argv[1])          # no NeuralNetwork class here
images = torch.load(sys.argv[2])
with torch.no_grad():
    print(" ".join(str(int(c)) for c in model(images).argmax(1)))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--out", default=None, help="where to write the model (default: a "
                                              "temporary folder)")
    a = p.parse_args()
    model, test_set = train_briefly(a.epochs)
    folder = tempfile.mkdtemp()
    out = a.out or os.path.join(folder, "digits_jit.pt")
    traced = torch.jit.trace(model, torch.zeros(1, 1, 8, 8))
    torch.jit.save(traced, out)
    print(f"saved to {out} ({os.path.getsize(out)} bytes)")

    images = torch.stack([test_set[i][0] for i in range(10)])
    labels = [test_set[i][1].item() for i in range(10)]
    torch.save(images, os.path.join(folder, "images.pt"))
    served = subprocess.run([sys.executable, "-c", SERVER, out, os.path.join(folder, "images.pt")],
                            capture_output=True, text=True, check=True).stdout.split()
    with torch.no_grad():
        here = model(images).argmax(1).tolist()
    print("label  here  loaded in a fresh process")
    for y, h, s in zip(labels, here, served):
        print(f"{y:5d}  {h:4d}  {int(s):4d}")
    if [int(s) for s in served] != here:
        raise SystemExit("the loaded model disagrees")


if __name__ == "__main__":
    main()

"""Train the quickstart model briefly, export it to ONNX with a dynamic batch axis, run the
file in onnxruntime and print both libraries' predictions side by side.

    pip install 'torchlite-dl[onnx,examples]'
    python examples/export_onnx.py [--epochs 3] [--out digits.onnx]
"""
import argparse
import os
import tempfile

import numpy as np

import torchlite as torch

from quickstart import train_briefly


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--out", default=None, help="where to write the .onnx file (default: a "
                                              "temporary folder)")
    a = p.parse_args()
    try:
        import onnxruntime as ort
    except ImportError:
        raise SystemExit("this example needs onnx and onnxruntime: "
                         "pip install 'torchlite-dl[onnx]'")
    model, test_set = train_briefly(a.epochs)

    out = a.out or os.path.join(tempfile.mkdtemp(), "digits.onnx")
    torch.onnx.export(model, (torch.zeros(1, 1, 8, 8),), out, input_names=["image"],
                      output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    print(f"exported to {out} ({os.path.getsize(out)} bytes)")

    images = torch.stack([test_set[i][0] for i in range(8)])
    labels = [test_set[i][1].item() for i in range(8)]
    session = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    ort_logits = session.run(None, {"image": images.numpy()})[0]
    with torch.no_grad():
        tl_logits = model(images).numpy()
    print("label  torchlite  onnxruntime")
    for y, t, o in zip(labels, tl_logits.argmax(1), ort_logits.argmax(1)):
        print(f"{y:5d}  {t:9d}  {o:11d}")
    diff = float(np.abs(ort_logits - tl_logits).max())
    print(f"largest logit difference: {diff:.2e}")
    if diff > 1e-4:
        raise SystemExit("onnxruntime and torchlite disagree")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Synthetic document pages for a text detector (ppocr_v4_det), written as
sample folders of docs/calibration.md: DIR/sample_SSS/input_0.pb.

Each page is a light, slightly noisy background with lines of dark
glyph-like marks: every glyph is 2 to 4 strokes of a 13-stroke box (the
segments and diagonals of a 14-segment display), in lines of random height
(14-40 px), colour and length, with word gaps. A DBNet-style detector fires
on them (ppocr_v4_det: about 11% of the pixels above 0.3), unlike on uniform
noise, where all its outputs stay below 3.3e-4. The image is normalised as
PaddleOCR's detector expects: (RGB / 255 - mean) / std, ImageNet mean and std,
NCHW float32.

usage: text_pages.py OUT_DIR SEEDS [--size N] [--name INPUT_NAME]
  SEEDS: comma-separated integers, one page per seed (same seed, same page)
needs: numpy and onnx (Debian: python3-numpy python3-onnx)
"""
import argparse
import os

import numpy as np
from onnx import numpy_helper

# strokes of a glyph box, (x0, y0, x1, y1) in units of its width and height
STROKES = [(0, 0, 1, 0), (0, .5, 1, .5), (0, 1, 1, 1), (0, 0, 0, .5), (0, .5, 0, 1),
           (1, 0, 1, .5), (1, .5, 1, 1), (.5, 0, .5, .5), (.5, .5, .5, 1), (0, 0, .5, .5),
           (1, 0, .5, .5), (0, 1, .5, .5), (1, 1, .5, .5)]
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def stroke(mask, x0, y0, x1, y1, t):
    """Marks a line of thickness t from (x0, y0) to (x1, y1)."""
    n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
    for i in range(n + 1):
        x = int(x0 + (x1 - x0) * i / n)
        y = int(y0 + (y1 - y0) * i / n)
        mask[max(y - t // 2, 0):y + t - t // 2, max(x - t // 2, 0):x + t - t // 2] = True


def page(seed, size):
    """An RGB page in [0, 1], size x size x 3."""
    rng = np.random.default_rng(seed)
    img = np.full((size, size, 3), rng.uniform(200, 255), np.float32)
    img += rng.normal(0, 4, img.shape).astype(np.float32)
    y = int(rng.integers(10, 40))
    while y < size - 40:
        h = int(rng.integers(14, 40))
        w = int(h * rng.uniform(0.5, 0.8))
        t = max(2, h // 8)
        colour = rng.uniform(0, 80, 3)
        x = int(rng.integers(10, 80))
        x_end = int(rng.integers(size // 2, size - 10))
        while x + w < x_end:
            if rng.uniform() < 0.15:  # a word gap
                x += w
                continue
            glyph = np.zeros((h + t, w + t), bool)
            for s in rng.choice(len(STROKES), size=int(rng.integers(2, 5)), replace=False):
                a = STROKES[s]
                stroke(glyph, a[0] * (w - 1) + t // 2, a[1] * (h - 1) + t // 2,
                       a[2] * (w - 1) + t // 2, a[3] * (h - 1) + t // 2, t)
            region = img[y:y + h + t, x:x + w + t]
            region[glyph[:region.shape[0], :region.shape[1]]] = colour
            x += w + t + int(rng.integers(2, 6))
        y += h + int(rng.integers(h // 2, 2 * h))
    return np.clip(img, 0, 255) / 255.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('out')
    ap.add_argument('seeds')
    ap.add_argument('--size', type=int, default=640)
    ap.add_argument('--name', default='x')
    a = ap.parse_args()
    for seed in (int(s) for s in a.seeds.split(',')):
        x = ((page(seed, a.size) - MEAN) / STD).transpose(2, 0, 1)[None].astype(np.float32)
        d = os.path.join(a.out, f'sample_{seed:03d}')
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, 'input_0.pb'), 'wb') as f:
            f.write(numpy_helper.from_array(x, a.name).SerializeToString())


if __name__ == '__main__':
    main()

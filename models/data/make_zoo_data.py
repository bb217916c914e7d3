"""Writes the zoo's generated datasets next to this script (deterministic; numpy only):

- a toy English corpus from a small grammar (vocabulary under 40 words, id 0 unused), as
  ``text_windows.npz``: windows for a language model (``x``, ``y`` int32 [N, 12]: y is x
  shifted by one token), and ``skipgram.npz``: skip-gram pairs with negative sampling
  (``center``, ``context`` int32 [M], ``label`` float32 [M]: 1 for a word within 2 positions of
  the centre, 0 for each of 2 random words drawn per true pair).
- ``sequences.npz``: token sequences (``tokens`` int32 [N, 12], ids 1..9, zero-padded after a
  random length 4..12) labelled 1 when they hold more of {1, 2, 3} than of {7, 8, 9}
  (``label`` int64 [N]; no ties).
- ``houses.csv``: 600 houses, one a row under a header: five features on very different scales
  (``rooms``, ``area_m2``, ``age_years``, ``distance_km``, ``floor``) and a real-valued
  ``price`` (a smooth function of them plus noise), for a CSV regressor with normalization.
- ``digit_pairs.npz``: pairs of the bundled digits (``a``, ``b`` uint8 [2000, 64]) and whether
  they show the same digit (``same`` int64; about 55%), for the siamese network.

Run ``python models/data/make_zoo_data.py`` to regenerate them.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SUBJECTS = ["the cat", "the dog", "a bird", "my friend", "the old man", "a small child"]
VERBS = ["sees", "likes", "follows", "finds", "watches"]
OBJECTS = ["the ball", "a red box", "the green tree", "my hat", "the big house", "a fish"]
PLACES = ["in the park", "near the river", "at home", "on the hill"]


def corpus(rng: np.random.Generator, sentences: int) -> list[str]:
    words = []
    for _ in range(sentences):
        s = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
        if rng.random() < 0.5:
            s += f" {rng.choice(PLACES)}"
        words += s.split() + ["."]
    return words


def text(rng: np.random.Generator) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    words = corpus(rng, 1200)
    vocab = sorted(set(words))
    ids = np.array([vocab.index(w) + 1 for w in words], np.int32)  # 0 is kept for padding
    assert len(vocab) < 40
    t = 12
    starts = np.arange(0, len(ids) - t - 1, 3)[:1500]
    x = np.stack([ids[s:s + t] for s in starts])
    y = np.stack([ids[s + 1:s + t + 1] for s in starts])
    centers, contexts, labels = [], [], []
    for i in range(2, min(len(ids) - 2, 2500)):
        for j in (i - 2, i - 1, i + 1, i + 2):
            centers.append(ids[i])
            contexts.append(ids[j])
            labels.append(1.0)
            for _ in range(2):
                centers.append(ids[i])
                contexts.append(rng.integers(1, len(vocab) + 1))
                labels.append(0.0)
    return {"x": x, "y": y}, {"center": np.array(centers, np.int32), "context": np.array(contexts, np.int32),
                              "label": np.array(labels, np.float32)}


def sequences(rng: np.random.Generator, n: int = 2000) -> dict[str, np.ndarray]:
    tokens = np.zeros((n, 12), np.int32)
    labels = np.zeros(n, np.int64)
    i = 0
    while i < n:
        length = rng.integers(4, 13)
        seq = rng.integers(1, 10, length)
        low, high = np.isin(seq, [1, 2, 3]).sum(), np.isin(seq, [7, 8, 9]).sum()
        if low == high:
            continue
        tokens[i, :length] = seq
        labels[i] = int(low > high)
        i += 1
    return {"tokens": tokens, "label": labels}


def houses(rng: np.random.Generator, n: int = 600) -> str:
    rooms = rng.integers(1, 7, n)
    area = rooms * 22.0 + rng.normal(0, 12, n).clip(-30, 30) + 15
    age = rng.uniform(0, 80, n)
    distance = rng.gamma(2.0, 3.0, n)
    floor = rng.integers(0, 12, n)
    price = 40 + 2.2 * area + 6 * rooms - 0.6 * age - 25 * np.log1p(distance) + 1.5 * np.sqrt(floor)
    price = price + rng.normal(0, 8, n)
    rows = ["rooms,area_m2,age_years,distance_km,floor,price"]
    rows += [f"{r},{a:.1f},{g:.1f},{d:.2f},{f},{p:.2f}" for r, a, g, d, f, p in zip(rooms, area, age, distance, floor, price)]
    return "\n".join(rows) + "\n"


def digit_pairs(rng: np.random.Generator, n: int = 2000) -> dict[str, np.ndarray]:
    """Pairs of the bundled 8x8 digits (uint8 0..16), half of the same digit: ``a``, ``b`` [n, 64]
    and ``same`` int64 [n]; the second of a pair is never the first image itself."""
    with np.load(HERE.parents[1] / "specflow" / "data" / "digits.npz") as d:
        images, labels = d["images"], d["labels"]
    a = rng.integers(0, len(images), n)
    b = np.empty(n, np.int64)
    for i in range(n):
        pool = np.flatnonzero(labels == labels[a[i]]) if i % 2 == 0 else np.arange(len(images))
        b[i] = rng.choice(pool[pool != a[i]])
    return {"a": images[a], "b": images[b], "same": (labels[a] == labels[b]).astype(np.int64)}


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    windows, pairs = text(rng)
    np.savez_compressed(HERE / "text_windows.npz", **windows)
    np.savez_compressed(HERE / "skipgram.npz", **pairs)
    np.savez_compressed(HERE / "sequences.npz", **sequences(rng))
    (HERE / "houses.csv").write_text(houses(np.random.default_rng(1)))
    np.savez_compressed(HERE / "digit_pairs.npz", **digit_pairs(np.random.default_rng(2)))

#!/usr/bin/env python3
"""Converts scikit-learn's digits.csv.gz into four IDX files (see scripts/fetch-digits.sh).

    python3 scripts/digits_to_idx.py digits.csv.gz OUT_DIR

Each CSV row is 64 pixel values (0..16, row-major 8x8) and the label (0..9). The first 1497
rows are the training set, the last 300 the test set. Each file is written to a temporary name
and renamed once complete, so an interrupted run leaves no partial file under the final name.
Standard library only.
"""

import csv
import gzip
import os
import struct
import sys

ROWS = 1797
TEST_ROWS = 300
SIDE = 8
UINT8 = 0x08


def read_rows(path):
    images, labels = [], []
    with gzip.open(path, "rt", newline="") as text:
        for number, row in enumerate(csv.reader(text), start=1):
            if len(row) != SIDE * SIDE + 1:
                sys.exit(f"digits_to_idx: {path} line {number}: {len(row)} columns, expected 65")
            values = [int(float(cell)) for cell in row]
            if not all(0 <= v <= 16 for v in values[:-1]) or not 0 <= values[-1] <= 9:
                sys.exit(f"digits_to_idx: {path} line {number}: a pixel outside 0..16 or a label "
                         "outside 0..9")
            images.append(bytes(values[:-1]))
            labels.append(values[-1])
    if len(images) != ROWS:
        sys.exit(f"digits_to_idx: {path} has {len(images)} rows, expected {ROWS}")
    return images, labels


def write_idx(path, dims, payload):
    header = struct.pack(">BBBB", 0, 0, UINT8, len(dims)) + struct.pack(f">{len(dims)}I", *dims)
    temporary = path + ".tmp"
    with open(temporary, "wb") as out:
        out.write(header + payload)
    os.replace(temporary, path)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: digits_to_idx.py digits.csv.gz OUT_DIR")
    source, out_dir = sys.argv[1], sys.argv[2]
    images, labels = read_rows(source)
    train = ROWS - TEST_ROWS
    for name, part in (("train", slice(0, train)), ("test", slice(train, ROWS))):
        part_images, part_labels = images[part], labels[part]
        count = len(part_labels)
        write_idx(os.path.join(out_dir, f"{name}-images-idx3-ubyte"), (count, SIDE, SIDE),
                  b"".join(part_images))
        write_idx(os.path.join(out_dir, f"{name}-labels-idx1-ubyte"), (count,), bytes(part_labels))


if __name__ == "__main__":
    main()

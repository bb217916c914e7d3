"""Data sources: the builtin digits set, npz/npy/CSV files, the split, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import SpecError
from specflow.train.data import load_source, select, split


def test_builtin_digits():
    d = load_source({"builtin": "digits"})
    x, y = d["x"], d["y"]
    assert x.shape == (1797, 64) and x.dtype == np.float32
    assert y.shape == (1797,) and y.dtype == np.int64
    assert x.min() == 0.0 and x.max() == 1.0
    assert set(np.unique(y)) == set(range(10))
    # pixels are 0..16 scaled by 1/16
    np.testing.assert_array_equal(np.unique(x * 16), np.arange(17, dtype=np.float32))


def test_npz_and_npy(tmp_path):
    x, y = np.arange(12, dtype=np.float32).reshape(6, 2), np.arange(6)
    np.savez(tmp_path / "d.npz", x=x, y=y)
    d = load_source({"npz": "d.npz"}, tmp_path)
    np.testing.assert_array_equal(d["x"], x)
    np.testing.assert_array_equal(d["y"], y)
    np.save(tmp_path / "a.npy", x)
    np.save(tmp_path / "b.npy", y)
    d = load_source({"npy": {"feat": "a.npy", "lab": "b.npy"}}, tmp_path)
    assert set(d) == {"feat", "lab"}
    np.testing.assert_array_equal(d["feat"], x)


def test_csv_with_header(tmp_path):
    (tmp_path / "d.csv").write_text("a,label,b\n1,0,2.5\n\n3,1,4\n")
    d = load_source({"csv": "d.csv", "label_column": "label", "header": True}, tmp_path)
    np.testing.assert_array_equal(d["x"], np.array([[1, 2.5], [3, 4]], np.float32))
    np.testing.assert_array_equal(d["y"], [0, 1])
    assert d["x"].dtype == np.float32 and d["y"].dtype == np.int64


def test_csv_without_header(tmp_path):
    (tmp_path / "d.csv").write_text("1,2,7\n3,4,8\n")
    d = load_source({"csv": "d.csv", "label_column": 2, "header": False}, tmp_path)
    np.testing.assert_array_equal(d["x"], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(d["y"], [7, 8])


@pytest.mark.parametrize(
    "text, source, message",
    [
        ("a,label\n1,0\n2,x\n", {}, r"row 3, column 'label': 'x' is not a number"),
        ("a,label\n1,0\nfoo,1\n", {}, r"row 3, column 'a': 'foo' is not a number"),
        ("a,label\n1,0.5\n", {}, r"row 2, column 'label': label '0.5' is not an integer"),
        ("a,label\n1,0\n2\n", {}, r"row 3 has 1 cells, expected 2"),
        ("a,lable\n1,0\n", {}, r"has no column 'label' \(did you mean 'lable'\?\)"),
        ("1,0\n", {"header": False}, r"label_column must be a 0-based index"),
        ("1,0\n", {"header": False, "label_column": 5}, r"label_column 5 is out of range"),
        ("a,label\n", {}, r"has no data rows"),
        ("1,x\n", {"header": False, "label_column": 0}, r"row 1, column 1: 'x' is not a number"),
        # inf and labels past 2^53 were cast to int64's minimum, a silently wrong class
        ("a,label\n1,0\n2,inf\n", {}, r"row 3, column 'label': label 'inf' is not an integer"),
        ("a,label\n1,0\n2,-inf\n", {}, r"row 3, column 'label': label '-inf' is not an integer"),
        ("a,label\n1,1e30\n", {}, r"row 2, column 'label': label '1e30' is out of range"),
        ("a,label\n1,9007199254740993\n", {}, r"label '9007199254740993' is out of range"),
    ],
)
def test_csv_errors(tmp_path, text, source, message):
    (tmp_path / "d.csv").write_text(text)
    with pytest.raises(SpecError, match=message):
        load_source({"csv": "d.csv", **source}, tmp_path)


def test_missing_files_name_the_path(tmp_path):
    for source, where in (
        ({"npz": "nope.npz"}, "train.data.source.npz"),
        ({"csv": "nope.csv"}, "train.data.source.csv"),
        ({"npy": {"x": "nope.npy"}}, "train.data.source.npy.x"),
    ):
        with pytest.raises(SpecError, match="data file not found: .*nope") as e:
            load_source(source, tmp_path)
        assert e.value.path == where
        assert str(tmp_path) in str(e.value)


def test_a_directory_or_device_is_not_called_missing(tmp_path):
    """`npz: /dev/zero` (or a directory) said 'data file not found', though it is there."""
    (tmp_path / "d.npz").mkdir()
    for source, want in (({"npz": "/dev/zero"}, "/dev/zero is not a regular file"),
                         ({"csv": "d.npz"}, "d.npz is a directory, not a data file")):
        with pytest.raises(SpecError, match=want):
            load_source(source, tmp_path)


def test_unreadable_and_wrong_kind_files(tmp_path):
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(SpecError, match="cannot read .*junk.npz"):
        load_source({"npz": "junk.npz"}, tmp_path)
    np.save(tmp_path / "one.npy", np.zeros(3))
    with pytest.raises(SpecError, match="holds one array, not an .npz archive"):
        load_source({"npz": "one.npy"}, tmp_path)


def test_ragged_lengths_and_scalars(tmp_path):
    np.savez(tmp_path / "r.npz", x=np.zeros((5, 2)), y=np.zeros(4))
    with pytest.raises(SpecError, match="same number of rows.*'x' has 5, 'y' has 4"):
        load_source({"npz": "r.npz"}, tmp_path)
    np.savez(tmp_path / "s.npz", x=np.zeros(3), c=np.float32(1))
    with pytest.raises(SpecError, match="field 'c' is a scalar"):
        load_source({"npz": "s.npz"}, tmp_path)


def test_bad_source_mappings():
    with pytest.raises(SpecError, match="exactly one of builtin, npz, npy, csv"):
        load_source({"npz": "a.npz", "csv": "b.csv"})
    with pytest.raises(SpecError, match="exactly one of"):
        load_source({"parquet": "a"})
    with pytest.raises(SpecError, match=r"unknown option 'header' for a npz source"):
        load_source({"npz": "a.npz", "header": True})
    with pytest.raises(SpecError, match=r"unknown option 'lable_column'.*did you mean 'label_column'"):
        load_source({"csv": "a.csv", "lable_column": "y"})
    with pytest.raises(SpecError, match=r"unknown builtin dataset 'digit' \(did you mean 'digits'\?\)"):
        load_source({"builtin": "digit"})


def test_select_unknown_field():
    arrays = {"x": np.zeros(3), "y": np.zeros(3)}
    assert select(arrays, {"images": "x"})["images"] is arrays["x"]
    with pytest.raises(SpecError, match=r"no field 'xx' \(did you mean 'x'\?\); fields: x, y") as e:
        select(arrays, {"images": "xx"})
    assert e.value.path == "train.data.feeds.images"


def test_split_is_deterministic_and_disjoint():
    arrays = {"x": np.arange(100) * 10, "y": np.arange(100)}
    train, test = split(arrays, 0.2, seed=0)
    assert len(test["y"]) == 20 and len(train["y"]) == 80
    assert not set(train["y"]) & set(test["y"])
    np.testing.assert_array_equal(train["x"], train["y"] * 10)  # rows stay aligned
    assert np.all(np.diff(train["y"]) > 0)  # original order kept
    again, _ = split(arrays, 0.2, seed=0)
    np.testing.assert_array_equal(again["y"], train["y"])
    other, _ = split(arrays, 0.2, seed=1)
    assert not np.array_equal(other["y"], train["y"])
    digits = load_source({"builtin": "digits"})
    tr, te = split(digits, 0.2, seed=0)
    assert len(te["y"]) == 360 and len(tr["y"]) == 1437


def test_split_errors():
    arrays = {"x": np.arange(3)}
    with pytest.raises(SpecError, match=r"in \[0, 1\)"):
        split(arrays, 1.0)
    with pytest.raises(SpecError, match="leaves no training examples"):
        split({"x": np.arange(1)}, 0.5)


def test_stratified_split_holds_out_each_class_in_proportion():
    from specflow.train.data import split as split_arrays

    y = np.repeat(np.arange(4), [10, 20, 30, 40])
    x = np.arange(100, dtype=np.float32)
    train, test = split_arrays({"x": x, "y": y}, 0.2, seed=3, stratify="y")
    assert np.bincount(test["y"]).tolist() == [2, 4, 6, 8]
    assert sorted(np.concatenate([train["x"], test["x"]]).tolist()) == x.tolist()
    again = split_arrays({"x": x, "y": y}, 0.2, seed=3, stratify="y")[1]
    assert np.array_equal(again["x"], test["x"])
    with pytest.raises(SpecError, match="cannot stratify by 'label'"):
        split_arrays({"x": x, "y": y}, 0.2, seed=3, stratify="label")


def test_csv_labels_below_2_to_the_53_are_exact(tmp_path):
    (tmp_path / "d.csv").write_text("a,label\n1,9007199254740991\n2,-9007199254740991\n")
    d = load_source({"csv": "d.csv", "label_column": "label", "header": True}, tmp_path)
    np.testing.assert_array_equal(d["y"], np.array([2**53 - 1, -(2**53 - 1)], np.int64))

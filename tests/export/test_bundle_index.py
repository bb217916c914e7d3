"""An export's variables/variables.index parsed back table entry by table entry and checked field by
field against the data file and the checkpoint it came from, with an independent crc32c."""

from __future__ import annotations

import numpy as np

from specflow.export.exporter import export_model
from specflow.export.serving import serving_model
from specflow.graph.dtypes import as_dtype
from specflow.io.extra_protos import BundleEntryProto, BundleHeaderProto
from specflow.io.sstable import read_table


def crc32c_reference(data: bytes) -> int:
    """Bitwise CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): slow and obviously right."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    """TensorFlow's crc32c::Mask."""
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_crc32c_reference_matches_the_rfc_3720_vector():
    assert crc32c_reference(b"123456789") == 0xE3069283


def test_variables_index_fields_match_the_data_file(trained, tmp_path):
    spec, logdir = trained("linear_regression")
    out = tmp_path / "export"
    export_model(spec, logdir, out)
    values = serving_model(spec, logdir).variables
    prefix = out / "variables" / "variables"
    data = (out / "variables" / "variables.data-00000-of-00001").read_bytes()

    entries = read_table(str(prefix) + ".index")
    assert [k for k, _ in entries] == sorted(k for k, _ in entries)  # a sorted table
    key, raw = entries[0]
    assert key == b""  # the header comes first
    header = BundleHeaderProto()
    header.ParseFromString(raw)
    assert header.num_shards == 1 and header.endianness == BundleHeaderProto.LITTLE
    assert header.version.producer == 1

    expected_offset = 0
    names = []
    for key, raw in entries[1:]:
        name = key.decode()
        names.append(name)
        entry = BundleEntryProto()
        entry.ParseFromString(raw)
        if name == "_CHECKPOINTABLE_OBJECT_GRAPH":  # TF2's object graph: a string scalar
            assert as_dtype(entry.dtype).name == "string" and not entry.shape.dim
            expected_offset += entry.size
            continue
        value = values[name.split("/.ATTRIBUTES/")[0]]
        assert as_dtype(entry.dtype) == as_dtype(value.dtype), name
        assert [d.size for d in entry.shape.dim] == list(value.shape), name
        assert entry.shard_id == 0
        assert entry.offset == expected_offset, name  # packed in key order, unaligned
        assert entry.size == value.nbytes, name
        chunk = data[entry.offset : entry.offset + entry.size]
        assert chunk == np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()
        assert entry.crc32c == masked(crc32c_reference(chunk)), name
        assert not entry.slices
        expected_offset += entry.size
    assert expected_offset == len(data)
    assert names == ["_CHECKPOINTABLE_OBJECT_GRAPH", "b/.ATTRIBUTES/VARIABLE_VALUE", "w/.ATTRIBUTES/VARIABLE_VALUE"]

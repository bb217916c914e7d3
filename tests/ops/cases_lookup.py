"""Lookup tables (specflow/ops/lookup_ops.py) are resources: they run through a Session in
tests/ops/test_lookup_ops.py."""

_WHERE = "a table is a resource (needs a ResourceMgr); tests/ops/test_lookup_ops.py"

EXEMPT = {
    op: _WHERE
    for op in (
        "HashTableV2",
        "MutableHashTableV2",
        "MutableHashTableOfTensorsV2",
        "InitializeTableV2",
        "InitializeTableFromTextFileV2",
        "LookupTableFindV2",
        "LookupTableInsertV2",
        "LookupTableImportV2",
        "LookupTableExportV2",
        "LookupTableSizeV2",
        "LookupTableRemoveV2",
    )
}

CASES: list = []

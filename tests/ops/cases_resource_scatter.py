"""ResourceScatterMul/Div/Max/Min and ResourceScatterNd*: they need resource variables."""

EXEMPT = {
    op: "tests/train/test_resource_scatter_ops.py (needs resource variables)"
    for op in (
        "ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterMax", "ResourceScatterMin",
        "ResourceScatterNdUpdate", "ResourceScatterNdAdd", "ResourceScatterNdSub", "ResourceScatterNdMax",
        "ResourceScatterNdMin",
    )
}  # fmt: skip

CASES: list = []
